import Foundation
import RunnelTestSupport
import Synchronization
import Testing

/// The protocol's framing on top of the shared client: requests as JSON values, and replies
/// parsed as JSON or failing as a `HarnessError`.
extension BlockingTCPClient {
    /// Sends a request built from a JSON value, followed by `\n`.
    func send(_ request: JSON) throws {
        try send(request.text)
    }

    /// The next line parsed as JSON; throws on timeout, close, or a line that is not JSON.
    func readJSON(timeout: Duration = BlockingTCPClient.defaultTimeout) throws -> JSON {
        guard let line = readLine(timeout: timeout) else {
            if isClosedByPeer { throw HarnessError.closed("waiting for a line") }
            throw HarnessError.timeout("no line within \(timeout)")
        }
        return try JSON.parse(line)
    }

    /// Sends one request line and returns the very next line the server writes, whatever it is.
    func request(_ line: String, timeout: Duration = BlockingTCPClient.defaultTimeout) throws -> JSON {
        try send(line)
        return try readJSON(timeout: timeout)
    }

    /// Sends a request built from a JSON value and returns the very next line.
    func request(_ request: JSON, timeout: Duration = BlockingTCPClient.defaultTimeout) throws -> JSON {
        try send(request)
        return try readJSON(timeout: timeout)
    }

    /// Records an issue if any line arrives within `within`.
    func expectNoLine(
        within: Duration = .milliseconds(300), sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let line = readLine(timeout: within)
        #expect(line == nil, "unexpected line: \(line ?? "")", sourceLocation: sourceLocation)
    }
}

/// Unique `ref`s for helper requests, so a reply can always be matched to its request.
private let refCounter = Atomic<Int>(0)

func nextRef(_ prefix: String = "r") -> JSON {
    .string("\(prefix)\(refCounter.add(1, ordering: .relaxed).newValue)")
}

/// Request helpers that keep each test to the protocol exchange it is about. Every helper reads
/// the very next line and expects it to be its own reply, so an unexpected event in between fails
/// the test rather than being skipped.
extension BlockingTCPClient {
    /// Sends `request` with a fresh `ref` added and returns the next line, which must carry that ref.
    @discardableResult
    func call(_ request: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        guard case .object(var members) = request else { throw HarnessError.badJSON(request.text) }
        let ref = nextRef(members["op"]?.string ?? "r")
        members["ref"] = ref
        let reply = try self.request(.object(members))
        #expect(reply["ref"] == ref, "reply to \(request) was \(reply)", sourceLocation: sourceLocation)
        return reply
    }

    /// Sends `request` (with a fresh ref) and expects exactly `{"ok":true,"ref":R}`.
    func expectOK(_ request: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reply = try call(request, sourceLocation: sourceLocation)
        #expect(
            reply == ["ok": true, "ref": reply["ref"] ?? nil], "reply to \(request)", sourceLocation: sourceLocation)
    }

    /// Subscribes with a chosen sid and expects exactly `{"ok":true,"ref":R,"sid":sid}`.
    func subscribe(
        _ subject: String, sid: String, ops: JSON? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var request: [String: JSON] = ["op": "sub", "subject": .string(subject), "sid": .string(sid)]
        if let ops { request["ops"] = ops }
        let reply = try call(.object(request), sourceLocation: sourceLocation)
        #expect(
            reply == ["ok": true, "ref": reply["ref"] ?? nil, "sid": .string(sid)], "sub \(subject)",
            sourceLocation: sourceLocation)
    }

    /// Publishes with a ref; expects exactly `{"ok":true,"ref":R,"receivers":N}` and returns N.
    @discardableResult
    func publish(_ subject: String, _ value: JSON, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int? {
        let reply = try call(
            ["op": "pub", "subject": .string(subject), "value": value], sourceLocation: sourceLocation)
        let receivers = reply["receivers"]
        #expect(
            reply == ["ok": true, "ref": reply["ref"] ?? nil, "receivers": receivers ?? nil], "pub \(subject)",
            sourceLocation: sourceLocation)
        return receivers?.int
    }

    /// Publishes without a ref: the server answers only if it fails.
    func publishQuietly(_ subject: String, _ value: JSON) throws {
        try send(["op": "pub", "subject": .string(subject), "value": value])
    }

    /// A `ping` round trip: every earlier request of this connection has been handled when it returns.
    func barrier(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectOK(["op": "ping"], sourceLocation: sourceLocation)
    }

    func stats(sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        let reply = try call(["op": "stats"], sourceLocation: sourceLocation)
        #expect(reply["ok"] == true, "stats: \(reply)", sourceLocation: sourceLocation)
        return reply
    }

    /// The `subjects` of a `list` reply, sorted by name.
    func list(prefix: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [JSON] {
        var request: [String: JSON] = ["op": "list"]
        if let prefix { request["prefix"] = .string(prefix) }
        let reply = try call(.object(request), sourceLocation: sourceLocation)
        #expect(reply.keys == ["ok", "ref", "subjects"], "list: \(reply)", sourceLocation: sourceLocation)
        let subjects = reply["subjects"]?.array ?? []
        return subjects.sorted { ($0["subject"]?.string ?? "") < ($1["subject"]?.string ?? "") }
    }

    /// Reads `count` events and groups their payloads by sid, keeping each sid's order; for tests
    /// where the interleaving of different subscriptions is unspecified.
    func readEvents(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: [JSON]] {
        var bySid: [String: [JSON]] = [:]
        for _ in 0..<count {
            let event = try readJSON()
            guard let sid = event["sid"]?.string else {
                Issue.record("expected an event, got \(event)", sourceLocation: sourceLocation)
                continue
            }
            bySid[sid, default: []].append(event)
        }
        return bySid
    }
}

/// Checks a failure reply: `ok:false`, the code, a string message, the echoed ref (or its
/// absence), `stage` only when expected, and no other fields.
func expectError(
    _ reply: JSON, code: String, ref: JSON?, stage: Int? = nil, checkRef: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(reply["ok"] == false, "\(reply)", sourceLocation: sourceLocation)
    #expect(reply["code"] == .string(code), "\(reply)", sourceLocation: sourceLocation)
    #expect(reply["message"]?.string != nil, "no message: \(reply)", sourceLocation: sourceLocation)
    if checkRef { #expect(reply["ref"] == ref, "\(reply)", sourceLocation: sourceLocation) }
    #expect(reply["stage"] == stage.map { .number(Double($0)) }, "\(reply)", sourceLocation: sourceLocation)
    #expect(
        reply.keys.isSubset(of: ["ok", "ref", "code", "message", "stage"]), "\(reply)", sourceLocation: sourceLocation)
}

extension BlockingTCPClient {
    /// Sends a raw request line carrying `ref` and checks that the reply is the error `code`.
    func expectFailure(
        _ line: String, code: String, ref: JSON?, stage: Int? = nil, checkRef: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reply = try request(line)
        expectError(reply, code: code, ref: ref, stage: stage, checkRef: checkRef, sourceLocation: sourceLocation)
    }
}

/// Raises this process's soft open-file limit (inherited by daemons spawned afterwards).
func raiseOpenFileLimit(to wanted: rlim_t) {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < wanted {
        limit.rlim_cur = min(wanted, limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

extension RunneldProcess {
    /// A new connection once the server admits one again (after a connection limit refused
    /// some): retried until a `ping` on it is answered, or nil after `eventually`'s time.
    func connectOnceAdmitted() throws -> BlockingTCPClient? {
        try eventually {
            let client = try connect()
            try? client.send(#"{"op":"ping","ref":"admitted"}"#)
            return try? client.readJSON() == ["ok": true, "ref": "admitted"] ? client : nil
        }
    }
}
