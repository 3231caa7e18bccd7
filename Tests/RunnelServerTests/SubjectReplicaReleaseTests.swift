import RunnelTestSupport
import Testing

@testable import RunnelServer

/// The turns of values a loop delivered go back to be let go where their bytes were made
/// (decision 0011, `ReplicaRequest.release`): the owner's own there, a reading loop's
/// session's on through the owner to that loop. Cross-thread: CI runs these under the thread
/// sanitizer.
@Suite struct SubjectReplicaReleaseTests {
    /// A burst of `pub`s from loop 1 reaches subscribers on all three loops in order, and the
    /// turns of its values, once delivered, go back through the owner to loop 1, whose session
    /// made their bytes (`ReplicaRequest.release`, `ReplicaUpdate.release`): values published
    /// after them are delivered as before.
    @Test func valuesForwardedByALoopGoBackToItOnceDelivered() {
        let servers = LoopServers(count: 3)
        defer { servers.shutdown() }
        let readers = (0..<3).map { loop in
            let reader = servers[loop].connect()
            servers[loop].send(reader, #"{"op":"sub","subject":"s","sid":"l\#(loop)"}"#)
            #expect(servers[loop].ask(reader, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
            return reader
        }
        let publisher = servers[1].connect()
        #expect(
            eventually {
                servers[1].send(publisher, #"{"op":"pub","subject":"s","value":-1,"ref":0}"#)
                return servers[1].lines(of: publisher, count: 1) == [#"{"ok":true,"ref":0,"receivers":3}"#]
            })
        for round in 0..<2 {
            let values = (0..<200).map { round * 200 + $0 }
            let lines = values.map { #"{"op":"pub","subject":"s","value":\#($0)}"# }
            servers[1].send(publisher, lines)
            Self.expect(values.map { #"{"ev":"next","sid":"l@","value":\#($0)}"# }, on: servers, readers)
        }
    }

    /// What else loop 1's clients hand the owner to publish, a map's keyed `pub`s and an
    /// NDJSON body on its HTTP front door, is published through the owner's stand-in for
    /// their publisher there, whose values' turns go back to loop 1 the same way
    /// (`PublisherGate.maker`), and reaches every loop in order.
    @Test func keyedPubsAndHTTPBodiesGoBackToTheirLoopToo() throws {
        let servers = LoopServers(count: 3)
        defer { servers.shutdown() }
        let port = try servers[1].serveHTTP()
        let owner = servers[0].connect()
        #expect(
            servers[0].ask(owner, #"{"op":"create","subject":"m","kind":"map","ref":"m"}"#, ref: "m")
                == #"{"ok":true,"ref":"m"}"#)
        let readers = (0..<3).map { loop in
            let reader = servers[loop].connect()
            servers[loop].send(
                reader, #"{"op":"sub","subject":"m","sid":"m\#(loop)"}"#,
                #"{"op":"sub","subject":"s","sid":"s\#(loop)"}"#)
            #expect(servers[loop].ask(reader, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
            return reader
        }
        let publisher = servers[1].connect()
        servers[1].send(publisher, (0..<200).map { #"{"op":"pub","subject":"m","key":"k\#($0)","value":\#($0)}"# })
        Self.expect((0..<200).map { #"{"ev":"next","sid":"m@","key":"k\#($0)","value":\#($0)}"# }, on: servers, readers)
        let body = (0..<600).map { "\($0)\n" }.joined()
        let answer = try SubjectReplicaHTTPTests.request(
            port: port, "POST", "/pub/s", body: body, type: "application/x-ndjson")
        #expect(answer.status == 200)
        #expect(answer.body == #"{"ok":true,"published":600}"#)
        Self.expect((0..<600).map { #"{"ev":"next","sid":"s@","value":\#($0)}"# }, on: servers, readers)
    }

    /// Expects every loop's reader to get `lines` in order, their `@` its loop's number.
    private static func expect(_ lines: [String], on servers: LoopServers, _ readers: [LoopServer.Client]) {
        for loop in readers.indices {
            let expected = lines.map { $0.replacingOccurrences(of: "@", with: "\(loop)") }
            var got: [String] = []
            #expect(
                eventually {
                    got += servers[loop].lines(of: readers[loop])
                    return got.last == expected.last
                })
            #expect(Array(got.drop { $0 != expected[0] }) == expected)
        }
    }
}
