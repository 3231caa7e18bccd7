import RunnelTestSupport
import Testing

@testable import RunnelServer

/// A connection on a loop that does not own the subjects gets its replies as on the owner's
/// loop: the events its own request made before that request's reply (the owner sends them
/// with its answer, and the reply goes after the events held right behind its place,
/// `CorkedTransport`), and what it sends after a request the owner answers read only once the
/// answer is in. Cross-thread: CI runs these under the thread sanitizer.
@Suite struct SubjectReplicaReplyOrderTests {
    /// A `pub` with a `ref` into a subject its own connection reads, and a keyed one into a map
    /// it reads: on either loop, the event, then the reply.
    @Test func aPubsOwnEventComesBeforeItsReplyOnEveryLoop() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        for loop in 0..<2 {
            servers[0].send(owner, #"{"op":"create","subject":"m\#(loop)","kind":"map"}"#)
            let client = servers[loop].connect()
            servers[loop].send(
                client, #"{"op":"sub","subject":"s\#(loop)","sid":"a"}"#,
                #"{"op":"sub","subject":"m\#(loop)","sid":"m"}"#)
            #expect(servers[loop].ask(client, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
            for value in 1...3 {
                let immediate = servers[loop].send(
                    client, #"{"op":"pub","subject":"s\#(loop)","value":\#(value),"ref":\#(value)}"#)
                let lines = immediate + (servers[loop].lines(of: client, count: 2 - immediate.count) ?? [])
                #expect(
                    lines == [
                        #"{"ev":"next","sid":"a","value":\#(value)}"#, #"{"ok":true,"ref":\#(value),"receivers":1}"#,
                    ], "loop \(loop)")
            }
            let immediate = servers[loop].send(
                client, #"{"op":"pub","subject":"m\#(loop)","key":"k","value":1,"ref":"k"}"#)
            let lines = immediate + (servers[loop].lines(of: client, count: 2 - immediate.count) ?? [])
            #expect(lines.count == 2 && lines.last == #"{"ok":true,"ref":"k","receivers":1}"#, "loop \(loop): \(lines)")
            #expect(lines.first?.hasPrefix(#"{"ev":"next","sid":"m","#) == true, "loop \(loop): \(lines)")
        }
    }

    /// `complete` of a subject its own connection reads: the `completed` event, then the reply,
    /// on either loop.
    @Test func anEndingsOwnEventComesBeforeItsReplyOnEveryLoop() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        for loop in 0..<2 {
            let client = servers[loop].connect()
            servers[loop].send(client, #"{"op":"sub","subject":"c\#(loop)","sid":"c"}"#)
            #expect(servers[loop].ask(client, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
            let immediate = servers[loop].send(client, #"{"op":"complete","subject":"c\#(loop)","ref":1}"#)
            let lines = immediate + (servers[loop].lines(of: client, count: 2 - immediate.count) ?? [])
            #expect(lines == [#"{"ev":"completed","sid":"c"}"#, #"{"ok":true,"ref":1}"#], "loop \(loop)")
        }
    }

    /// `list`s pipelined on loop 1, each answered by the owner: one is asked at a time, and
    /// the replies count against the unsent output before more are read, as on one loop, so a
    /// client that does not read (each reply here weighs 4 MiB against the 8 MiB soft limit)
    /// gets three replies and its input held, not one owner's answer per `list` it can send.
    @Test func pipelinedListsAreAskedOneAtATime() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        servers[0].send(servers[0].connect(), #"{"op":"create","subject":"x","kind":"subject"}"#)
        let client = servers[1].connect()
        servers[1].run { client.transport.unsentPerLine = 4 << 20 }
        servers[1].send(client, (1...100).map { #"{"op":"list","ref":\#($0)}"# })
        #expect(eventually { servers[1].run { client.transport.isInputPaused && client.transport.lines.count == 3 } })
        let replies = servers[1].run { client.transport.lines }
        #expect(replies.allSatisfy { $0.hasPrefix(#"{"ok":true,"ref":"#) })
    }
}
