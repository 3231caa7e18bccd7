import RunnelJSON

/// One `sub` as values: what to subscribe to, with which stages, from where, under which sid.
/// A `sub` line becomes one (`init(parsing:)`, which checks only its fields' types); a
/// transport that subscribes on its client's behalf makes one directly (`GET /events`, from its
/// query). `Session.subscribe` applies the protocol's rules to both alike, so a stream's
/// subscription is refused exactly where the same `sub` line would be.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields;
/// nothing in it points into a read buffer.
package struct SubscribeRequest {
    /// The subject or pattern, as given: `Session.subscribe` checks it.
    package var subject: String
    /// The sid asked for; nil lets the session pick one.
    package var sid: String?
    package var stages: [JSONValue]
    /// The length of the stage list's JSON text, what its stages pin against
    /// `max_subscription_bytes`: the `ops` field's bytes in a line, else `encodedLength(of:)`.
    package var stagesByteCount: Int
    /// `from` as given, `EPOCH:SEQ` when valid: `Session.subscribe` checks it.
    package var from: String?
    package var positions: Bool?
    /// `"conflate": true` (version 1.3): over the soft limit, only the latest value waits.
    package var conflate: Bool?
    /// `"ts": true` (version 1.3): `next` events carry their value's publish time.
    package var timestamps: Bool?
    /// `since` and `until` (version 1.3), in Unix ms: `Session.subscribe` checks where they
    /// apply.
    package var since: Int64?
    package var until: Int64?
    /// The `ref` to echo in the reply.
    package var ref: RawJSON?

    package init(
        subject: String, sid: String?, stages: [JSONValue], stagesByteCount: Int, from: String?, positions: Bool?,
        conflate: Bool? = nil, timestamps: Bool? = nil, since: Int64? = nil, until: Int64? = nil, ref: RawJSON? = nil
    ) {
        self.subject = subject
        self.sid = sid
        self.stages = stages
        self.stagesByteCount = stagesByteCount
        self.from = from
        self.positions = positions
        self.conflate = conflate
        self.timestamps = timestamps
        self.since = since
        self.until = until
        self.ref = ref
    }

    /// The fields of a `sub` line: `bad_request` where one has the wrong type.
    package init(parsing request: Request) throws(ProtocolError) {
        self.init(
            subject: try request.requiredString(.subject), sid: try request.string(.sid), stages: try request.stages(),
            stagesByteCount: request.stagesByteCount, from: try request.string(.from),
            positions: try request.bool(.positions), conflate: try request.bool(.conflate),
            timestamps: try Self.flag("ts", of: request), since: try Self.time("since", of: request),
            until: try Self.time("until", of: request), ref: request.ref)
    }

    /// The boolean field `name`, which the scanner does not pick out (a second walk over the
    /// line, on `sub` only); nil when absent; `bad_request` when not a boolean.
    private static func flag(_ name: String, of request: Request) throws(ProtocolError) -> Bool? {
        guard let field = request.scanned.field(named: name) else { return nil }
        guard let flag = request.scanned.bool(field) else {
            throw ProtocolError(.badRequest, "field '\(name)' must be true or false")
        }
        return flag
    }

    /// The time field `name` (`PublishTime`), found as `flag(_:of:)` finds its field.
    private static func time(_ name: String, of request: Request) throws(ProtocolError) -> Int64? {
        guard let field = request.scanned.field(named: name) else { return nil }
        let time =
            if let number = request.scanned.number(field) {
                PublishTime.milliseconds(number)
            } else {
                request.scanned.string(field).flatMap { PublishTime.milliseconds(rfc3339: $0) }
            }
        guard let time else { throw badTime(name) }
        return time
    }

    /// A time as a query parameter gives it: Unix ms in digits, or RFC 3339.
    package static func time(_ name: String, query text: String) throws(ProtocolError) -> Int64 {
        let time =
            if let number = Double(text), text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                PublishTime.milliseconds(number)
            } else {
                PublishTime.milliseconds(rfc3339: text)
            }
        guard let time else { throw badTime(name) }
        return time
    }

    private static func badTime(_ name: String) -> ProtocolError {
        ProtocolError(
            .badRequest,
            "field '\(name)' must be a time: Unix milliseconds (a number from 0), or an RFC 3339 date-time "
                + "such as 2026-12-02T14:00:00Z")
    }

    /// The subject or pattern: `bad_request` when it is neither.
    package func pattern() throws(ProtocolError) -> SubjectPattern {
        if let problem = SubjectName.problem(withPattern: subject) {
            throw ProtocolError(.badRequest, "bad subject or pattern: \(problem)")
        }
        return SubjectPattern(subject)
    }

    /// `from` as a position; nil when absent; `bad_request` unless `EPOCH:SEQ`.
    package func fromPosition() throws(ProtocolError) -> Position? {
        guard let from else { return nil }
        guard let position = Position(parsing: from) else {
            throw ProtocolError(
                .badRequest, "field 'from' must be a position EPOCH:SEQ (an epoch of 1 to 32 of A-Z a-z 0-9 _ -)")
        }
        return position
    }

    /// The `sub` line this request stands for, as `runnel sub` writes it: what a stream's
    /// subscription is measured by against `max_line_bytes`, as the line would be.
    package func line() -> [UInt8] {
        var request = JSONObject([("op", .string("sub"))])
        if let sid { request.set("sid", .string(sid)) }
        request.set("subject", .string(subject))
        if !stages.isEmpty { request.set("ops", .array(stages)) }
        if let positions { request.set("positions", .bool(positions)) }
        if let from { request.set("from", .string(from)) }
        if let conflate { request.set("conflate", .bool(conflate)) }
        if let timestamps { request.set("ts", .bool(timestamps)) }
        if let since { request.set("since", .number(Double(since))) }
        if let until { request.set("until", .number(Double(until))) }
        var writer = JSONWriter()
        writer.write(.object(request))
        return writer.bytes
    }

    /// The length of `stages`' JSON text as a line carries it.
    package static func encodedLength(of stages: [JSONValue]) -> Int {
        guard !stages.isEmpty else { return 0 }
        var writer = JSONWriter()
        writer.write(.array(stages))
        return writer.bytes.count
    }

    /// Why `line` (this request's `line()`) would not scan under `maxDepth`, the one problem a
    /// line made from values can have: it nests the stage list one level deeper than the list
    /// alone. The line is scanned only when it is too deep, for the error the scan reports.
    package func lineProblem(_ line: [UInt8], maxDepth: Int) -> ProtocolError? {
        guard lineDepth > maxDepth else { return nil }
        return line.withUnsafeBytes { bytes -> ProtocolError? in
            do throws(ProtocolError) {
                _ = try EnvelopeScanner(maxDepth: maxDepth).scan(bytes)
                return nil
            } catch {
                return error
            }
        }
    }

    /// How deeply the line nests its containers: the object, then the stage list's.
    package var lineDepth: Int { stages.isEmpty ? 1 : 1 + Self.depth(of: .array(stages)) }

    private static func depth(of value: JSONValue) -> Int {
        switch value {
        case .array(let items): 1 + (items.lazy.map(depth(of:)).max() ?? 0)
        case .object(let object): 1 + (object.members.lazy.map { depth(of: $0.value) }.max() ?? 0)
        default: 0
        }
    }
}
