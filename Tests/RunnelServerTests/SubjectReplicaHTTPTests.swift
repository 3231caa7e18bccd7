import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// `POST /pub/SUBJECT` and `DELETE /pub/SUBJECT?key=K` on the HTTP front door of a loop that
/// does not own the subjects (decision 0011): each read's values go to the owner as one batch
/// (`PublishedBatch`), published there by the rule a request on the owner follows, and the
/// request is answered as it would be there. Loop 0 owns the subjects; the requests come in on
/// loop 1's front door, over a real socket. Cross-thread: CI runs these under the thread
/// sanitizer.
@Suite struct SubjectReplicaHTTPTests {
    /// An NDJSON body of many reads reaches subscribers on both loops, in order, and is
    /// answered with how many values were published.
    @Test func anNDJSONBodyOnAnotherLoopIsPublishedInOrder() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owners = servers[0].connect()
        let readers = servers[1].connect()
        servers[0].send(owners, #"{"op":"sub","subject":"s","sid":"a"}"#)
        servers[1].send(readers, #"{"op":"sub","subject":"s","sid":"b"}"#)
        #expect(servers[1].lines(of: readers, count: 1) == [#"{"ok":true,"sid":"b"}"#])
        let count = 3000
        let body = (0..<count).map { #"{"n":\#($0),"pad":"\#(String(repeating: "x", count: 40))"}"# + "\n" }.joined()
        let answer = try Self.request(port: port, "POST", "/pub/s", body: body, type: "application/x-ndjson")
        #expect(answer.status == 200)
        #expect(answer.body == #"{"ok":true,"published":\#(count)}"#)
        for (server, client, sid) in [(servers[0], owners, "a"), (servers[1], readers, "b")] {
            let lines = try #require(server.lines(of: client, count: count), "\(sid)")
            let events = lines.filter { $0.hasPrefix(#"{"ev":"next""#) }
            #expect(events.count == count)
            #expect(events.enumerated().allSatisfy { $0.element.contains(#""value":{"n":\#($0.offset),"#) })
        }
    }

    /// A bad line fails the request there: the lines before it are published, none after it,
    /// and the error says how many were.
    @Test func aBadLineStopsTheBodyThere() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owners = servers[0].connect()
        servers[0].send(owners, #"{"op":"sub","subject":"s","sid":"a"}"#)
        let answer = try Self.request(port: port, "POST", "/pub/s", body: "1\n2\n{\n3\n", type: "application/x-ndjson")
        #expect(answer.status == 400)
        #expect(answer.body.hasPrefix(#"{"ok":false,"code":"bad_json","#))
        #expect(answer.body.hasSuffix(#","published":2}"#))
        Self.expectValues(["1", "2"], of: owners, on: servers[0])
    }

    /// The owner's refusal of a value (here `limit`: no room left in `max_retained_bytes`)
    /// stops the body at that value: the values before it are published, none after it.
    @Test func theOwnersRefusalStopsTheBodyAtItsValue() throws {
        let servers = LoopServers(count: 2) { $0.maxRetainedBytes = 1000 }
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owners = servers[0].connect()
        servers[0].send(
            owners, #"{"op":"create","subject":"r","kind":"replay","capacity":10}"#,
            #"{"op":"sub","subject":"r","sid":"a"}"#)
        let tooLarge = "\"" + String(repeating: "x", count: 2000) + "\""
        let answer = try Self.request(
            port: port, "POST", "/pub/r", body: "1\n2\n\(tooLarge)\n4\n", type: "application/x-ndjson")
        #expect(answer.status == 413)
        #expect(answer.body.hasPrefix(#"{"ok":false,"code":"limit","#))
        #expect(answer.body.hasSuffix(#","published":2}"#))
        Self.expectValues(["1", "2"], of: owners, on: servers[0])
    }

    /// One value is answered with its receivers on every loop; a map's checks are the owner's:
    /// a value without `?key=` is refused, one with it written, and `DELETE` removes the key.
    @Test func oneValueAndAMapsKeyAreTheOwners() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owners = servers[0].connect()
        let readers = servers[1].connect()
        servers[0].send(
            owners, #"{"op":"create","subject":"m","kind":"map"}"#, #"{"op":"sub","subject":"s","sid":"a"}"#)
        servers[1].send(readers, #"{"op":"sub","subject":"s","sid":"b"}"#)
        #expect(servers[1].lines(of: readers, count: 1) == [#"{"ok":true,"sid":"b"}"#])
        #expect(
            eventually {
                (try? Self.request(port: port, "POST", "/pub/s", body: "7"))?.body == #"{"ok":true,"receivers":2}"#
            })
        let keyless = try Self.request(port: port, "POST", "/pub/m", body: "1")
        #expect(keyless.status == 400)
        #expect(keyless.body.contains("is a map: pub needs field 'key'"))
        servers[0].send(owners, #"{"op":"sub","subject":"m","sid":"m"}"#)
        let written = try Self.request(port: port, "POST", "/pub/m?key=k", body: #"{"on":true}"#)
        #expect(written.body == #"{"ok":true,"receivers":1}"#)
        let removed = try Self.request(port: port, "DELETE", "/pub/m?key=k", body: "")
        #expect(removed.body == #"{"ok":true,"receivers":1}"#)
        var lines: [String] = []
        #expect(
            eventually {
                lines += servers[0].lines(of: owners).filter { $0.contains(#""sid":"m""#) }
                return lines.count >= 2
            }, "\(lines)")
        #expect(lines.count == 2)
        #expect(lines[0].contains(#""key":"k""#) && lines[0].contains(#""value":{"on":true}"#))
        #expect(lines[1] == #"{"ev":"removed","sid":"m","key":"k","reason":"deleted"}"#)
    }

    /// Under `backpressure`, a subscriber on the owner lagging behind the request's values
    /// pauses the request on its own loop: the rest of its body waits, and so does its
    /// answer, until the subscriber has caught up.
    @Test func aLaggingSubscriberOnTheOwnerPausesTheRequest() throws {
        let servers = LoopServers(count: 2) {
            $0.slowConsumer = .backpressure
            $0.softPendingBytes = 1000
        }
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let subscriber = servers[0].connect()
        #expect(servers[0].send(subscriber, #"{"op":"sub","subject":"s","sid":"a"}"#) == [#"{"ok":true,"sid":"a"}"#])
        servers[0].run { subscriber.transport.unsentPerLine = 2000 }
        let client = try BlockingTCPClient(port: port)
        let body = (1...10).map { "\($0)\n" }.joined()
        try client.sendRaw(Self.head("POST", "/pub/s", length: body.utf8.count, type: "application/x-ndjson") + body)
        #expect(eventually { servers[1].run { servers[1].server.value.publisherPauses.pausedNow } == 1 })
        // The second value put the subscriber over the soft limit: nothing after it went out.
        #expect(
            servers[0].run { subscriber.transport.takeLines() }
                == (1...2).map { #"{"ev":"next","sid":"a","value":\#($0)}"# })
        servers[0].run {
            subscriber.transport.unsentPerLine = 0
            subscriber.transport.drain()
        }
        #expect(try Self.answer(from: client).body == #"{"ok":true,"published":10}"#)
        Self.expectValues((3...10).map(String.init), of: subscriber, on: servers[0])
    }

    /// A browser reconnecting to `/events` on loop 1 right after the last value of a subject
    /// that ended on the owner is answered `204`, so it stops reconnecting.
    @Test func aReconnectAfterTheEndIsAnsweredNoContent() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owner = servers[0].connect()
        let lines = servers[0].send(
            owner, #"{"op":"create","subject":"r","kind":"replay","capacity":5}"#,
            #"{"op":"pub","subject":"r","value":1}"#, #"{"op":"complete","subject":"r"}"#,
            #"{"op":"sub","subject":"r","sid":"a","positions":true}"#)
        let event = try #require(lines.first { $0.hasPrefix(#"{"ev":"next""#) })
        let position = try #require(event.split(separator: "\"").drop { $0 != "pos" }.dropFirst(2).first)
        let client = try BlockingTCPClient(port: port)
        try client.sendRaw(
            "GET /events?subject=r HTTP/1.1\r\nHost: test\r\nConnection: close\r\nLast-Event-ID: \(position)\r\n\r\n")
        #expect(try Self.answer(from: client).status == 204)
    }

    /// A chunked NDJSON body that grows past `max_body_bytes` on loop 1: the error counts every
    /// value read before the limit, the batch still at the owner when the body failed included.
    @Test func aBodyPastItsLimitCountsWhatWasPublishedBeforeIt() throws {
        let servers = LoopServers(count: 2) { $0.maxBodyBytes = 4096 }
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let client = try BlockingTCPClient(port: port)
        let chunk = String(repeating: "1\n", count: 200)
        let chunks = String(repeating: "\(String(chunk.utf8.count, radix: 16))\r\n\(chunk)\r\n", count: 15)
        try client.sendRaw(
            "POST /pub/s HTTP/1.1\r\nHost: test\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
                + "Content-Type: application/x-ndjson\r\n\r\n" + chunks + "0\r\n\r\n")
        let answer = try Self.answer(from: client)
        #expect(answer.status == 413)
        #expect(answer.body.hasSuffix(#","published":2048}"#), "\(answer.body)")
    }

    /// An event stream whose `sub` fails once the owner has answered (its stage is refused
    /// after loop 1 opened the subject's replica) is answered with the error, and its session
    /// ends then: nothing is left counted as a stream.
    @Test func anEventStreamRefusedLaterLeavesNoSession() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let client = try BlockingTCPClient(port: port)
        try client.sendRaw(
            "GET /events?subject=x&ops=%5B%7B%22op%22%3A%22nope%22%7D%5D HTTP/1.1\r\nHost: test\r\n"
                + "Connection: close\r\n\r\n")
        #expect(try Self.answer(from: client).status == 400)
        #expect(eventually { servers[1].run { servers[1].server.value.connectionCountsByTransport["sse"] } == nil })
    }

    /// The values `client` is sent from now on are `expected`, and no more once a value
    /// published after them (a marker) has come.
    private static func expectValues(_ expected: [String], of client: LoopServer.Client, on server: LoopServer) {
        let marker = server.connect()
        server.send(marker, #"{"op":"pub","subject":"s","value":"end"}"#, #"{"op":"pub","subject":"r","value":"end"}"#)
        var values: [String] = []
        #expect(
            eventually {
                values += server.lines(of: client).compactMap { line in
                    line.hasPrefix(#"{"ev":"next""#)
                        ? line.split(separator: ",").last.map { String($0.dropLast()) } : nil
                }
                return values.last == #""value":"end""#
            })
        #expect(values.dropLast() == expected.map { #""value":\#($0)"# })
    }

    private static func head(_ method: String, _ path: String, length: Int, type: String?) -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: \(length)\r\n"
            + (type.map { "Content-Type: \($0)\r\n" } ?? "") + "\r\n"
    }

    /// Sends one request and reads its answer: the status and the body (one line).
    static func request(
        port: Int, _ method: String, _ path: String, body: String, type: String? = nil
    ) throws -> (status: Int, body: String) {
        let client = try BlockingTCPClient(port: port)
        try client.sendRaw(head(method, path, length: body.utf8.count, type: type) + body)
        return try answer(from: client)
    }

    /// The answer `client` is sent before the connection closes: its status and its body
    /// (without a last line break).
    private static func answer(from client: BlockingTCPClient) throws -> (status: Int, body: String) {
        let text = String(decoding: try #require(client.readBytesUntilClosed()), as: UTF8.self)
        let parts = text.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        let status = Int(parts[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = parts.count > 1 ? String(parts[1]) : ""
        return (status, body.hasSuffix("\n") ? String(body.dropLast()) : body)
    }
}
