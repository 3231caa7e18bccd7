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
            for loop in 0..<3 {
                let expected = values.map { #"{"ev":"next","sid":"l\#(loop)","value":\#($0)}"# }
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
}
