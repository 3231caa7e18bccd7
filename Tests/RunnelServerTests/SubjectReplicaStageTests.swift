import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// Stages that read other subjects, on a loop that does not own them (decision 0011): the
/// subjects a `sub`'s stages name read their replicas there, asked for before the `sub` is
/// answered, and those a value names at run time (`flattenMap`, `switchToLatest`) once the
/// owner has sent them; what the owner refuses fails the `sub` or the stage as it would on the
/// owner. Loop 0 owns the subjects. Cross-thread: CI runs these under the thread sanitizer.
@Suite struct SubjectReplicaStageTests {
    /// A `zipWith` on loop 1 pairs the values published into both subjects on loop 0; the
    /// owner counts the stage among its other subject's receivers; the replicas go with the
    /// subscription.
    @Test func aStageOnAnotherLoopReadsTheOwnersSubjects() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let owner = servers[0].connect()
        #expect(
            servers[1].send(
                reader, #"{"op":"sub","subject":"L","sid":"z","ref":1,"ops":[{"op":"zipWith","subject":"R"}]}"#
            )
            .isEmpty)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"ref":1,"sid":"z"}"#])
        #expect(servers[1].run { servers.replicas(on: 1)?["R"] != nil && servers.replicas(on: 1)?["L"] != nil })
        #expect(
            eventually {
                servers[0].send(owner, #"{"op":"pub","subject":"R","value":10,"ref":"r"}"#)
                    == [#"{"ok":true,"ref":"r","receivers":1}"#]
            })
        servers[0].send(
            owner, #"{"op":"pub","subject":"L","value":1}"#, #"{"op":"pub","subject":"L","value":2}"#,
            #"{"op":"pub","subject":"R","value":30}"#)
        let events = try #require(servers[1].lines(of: reader, count: 2))
        // R's first values (10, until loop 1 had told its count) pair with L's in order.
        #expect(events.first == #"{"ev":"next","sid":"z","value":[1,10]}"#)
        #expect(events.count == 2 && events[1].hasPrefix(#"{"ev":"next","sid":"z","value":[2,"#))
        servers[1].send(reader, #"{"op":"unsub","sid":"z"}"#)
        #expect(eventually { servers[1].run { servers.replicas(on: 1)?["R"] == nil } })
        #expect(
            eventually {
                servers[0].send(owner, #"{"op":"pub","subject":"R","value":0,"ref":"g"}"#)
                    == [#"{"ok":true,"ref":"g","receivers":0}"#]
            })
    }

    /// With `auto_create` off, a stage naming subjects the owner does not have fails the `sub`
    /// with the owner's reply, word for word, in its place; a stage naming several waits for
    /// them all at once.
    @Test func aSubjectTheOwnerRefusesFailsTheSubAsThere() {
        let servers = LoopServers(count: 2) { $0.autoCreate = false }
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"L","kind":"subject"}"#,
            #"{"op":"create","subject":"A","kind":"subject"}"#)
        let request = #"{"op":"sub","subject":"L","ref":1,"ops":[{"op":"merge","subjects":["A","nope"]}]}"#
        let there = servers[0].send(owner, request)
        #expect(there.count == 1 && there[0].contains(#""code":"unknown_subject""#))
        servers[1].send(reader, request, #"{"op":"ping","ref":2}"#)
        #expect(servers[1].lines(of: reader, count: 2) == there + [#"{"ok":true,"ref":2}"#])
        let merged = #"{"op":"sub","subject":"L","sid":"m","ref":3,"ops":[{"op":"merge","subjects":["A","B"]}]}"#
        servers[0].send(owner, #"{"op":"create","subject":"B","kind":"subject"}"#)
        servers[1].send(reader, merged)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"ref":3,"sid":"m"}"#])
        servers[0].send(owner, #"{"op":"pub","subject":"B","value":"b"}"#, #"{"op":"pub","subject":"A","value":"a"}"#)
        #expect(
            servers[1].lines(of: reader, count: 2) == [
                #"{"ev":"next","sid":"m","value":"b"}"#, #"{"ev":"next","sid":"m","value":"a"}"#,
            ])
    }

    /// A `flattenMap` on loop 1 follows the subjects its values name, read once the owner has
    /// sent them; a name the owner refuses ends the subscription with the stage's `eval` error,
    /// as on the owner.
    @Test func aSubjectNamedAtRunTimeIsReadOnceHere() throws {
        let servers = LoopServers(count: 2) { $0.autoCreate = false }
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"names","kind":"subject"}"#,
            #"{"op":"create","subject":"A","kind":"subject"}"#)
        let request = #"{"op":"sub","subject":"names","sid":"f","ops":[{"op":"flattenMap","expr":"."}]}"#
        #expect(servers[0].send(owner, request) == [#"{"ok":true,"sid":"f"}"#])
        servers[1].send(reader, request)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"sid":"f"}"#])
        servers[0].send(owner, #"{"op":"pub","subject":"names","value":"A"}"#)
        #expect(eventually { servers[1].run { servers.replicas(on: 1)?["A"] != nil } })
        servers[0].send(owner, #"{"op":"pub","subject":"A","value":1}"#)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ev":"next","sid":"f","value":1}"#])
        let ownersLines = servers[0].send(owner, #"{"op":"pub","subject":"names","value":"nope"}"#)
        let ended = try #require(ownersLines.first { $0.hasPrefix(#"{"ev":"error""#) })
        #expect(ended.contains(#""code":"eval""#) && ended.contains(#""stage":0"#))
        #expect(servers[1].lines(of: reader, count: 1) == [ended])
    }

    /// A stage that reads a subject only later (`concat`, once its source completes) holds its
    /// replica from the `sub` on: a value published into that subject right after the source
    /// completed reaches it, as on the owner's loop; the replica goes with the subscription.
    @Test func aSubjectAStageReadsLaterIsHeldFromTheSub() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let answered = servers[1].send(
            reader, #"{"op":"sub","subject":"s","sid":"c","ref":1,"ops":[{"op":"concat","subject":"o"}]}"#)
        #expect(
            (answered.isEmpty ? servers[1].lines(of: reader, count: 1) : answered) == [
                #"{"ok":true,"ref":1,"sid":"c"}"#
            ])
        // Turns have ended since: the replica of `o` is here, though nothing reads it yet.
        #expect(servers[1].ask(reader, #"{"op":"ping","ref":"p"}"#, ref: "p") != nil)
        #expect(servers[1].run { servers.replicas(on: 1)?["o"] != nil })
        let owner = servers[0].connect()
        servers[0].send(
            owner, #"{"op":"pub","subject":"s","value":1}"#, #"{"op":"complete","subject":"s"}"#,
            #"{"op":"pub","subject":"o","value":2}"#, #"{"op":"complete","subject":"o"}"#)
        #expect(
            servers[1].lines(of: reader, count: 3) == [
                #"{"ev":"next","sid":"c","value":1}"#, #"{"ev":"next","sid":"c","value":2}"#,
                #"{"ev":"completed","sid":"c"}"#,
            ])
        #expect(eventually { servers[1].run { servers.replicas(on: 1)?["o"] == nil } })
    }

    /// A value's fan-out on a reading loop is bounded by `max_publish_eval_ms` as on the owner:
    /// past it, the subscriptions that spent the most end with `eval` / `limit`, and the first
    /// ones still got the value.
    @Test func aReadingLoopsFanOutIsBoundedByMaxPublishEvalMs() throws {
        let servers = LoopServers(count: 2) { $0.maxPublishEvalMs = 1 }
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let count = 200
        let requests = (0..<count).map {
            #"{"op":"sub","subject":"s","sid":"d\#($0)","ops":[{"op":"map","expr":"len(str(.)) + \#($0)"}]}"#
        }
        var lines = servers[1].send(reader, requests)
        lines += servers[1].lines(of: reader, count: count - lines.count) ?? []
        #expect(lines.count == count && lines.allSatisfy { $0.hasPrefix(#"{"ok":true"#) })
        let owner = servers[0].connect()
        let value = String(repeating: "y", count: 200_000)
        // Loop 1 tells the owner of its subscriptions at the end of a turn.
        #expect(
            eventually {
                servers[0].send(owner, #"{"op":"list","prefix":"s","ref":"l"}"#).first?.contains(
                    #""subscribers":\#(count)"#) == true
            })
        servers[0].send(owner, #"{"op":"pub","subject":"s","value":"\#(value)"}"#)
        let events = try #require(servers[1].lines(of: reader, count: count))
        let ended = events.filter { $0.contains(#""code":"eval","message":"limit""#) }.count
        #expect(ended > 0 && ended < count, "\(ended) of \(count) ended")
    }

    /// A `flattenMap` on loop 1 reads a subject a value names from the moment that value is
    /// read, as on the owner's loop: the value published into it right after (in the same turn
    /// there) reaches it, whether the subject existed or was made by that value. The loop is
    /// sent every subject while the chain exists, and lets them go with it.
    @Test func aSubjectNamedAtRunTimeIsReadFromTheValueThatNamesIt() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(owner, #"{"op":"create","subject":"old","kind":"subject"}"#)
        let reader = servers[1].connect()
        let answered = servers[1].send(
            reader, #"{"op":"sub","subject":"s","sid":"f","ref":1,"ops":[{"op":"flattenMap","expr":"."}]}"#)
        #expect(
            (answered.isEmpty ? servers[1].lines(of: reader, count: 1) : answered) == [
                #"{"ok":true,"ref":1,"sid":"f"}"#
            ])
        #expect(servers[1].run { servers.replicas(on: 1)?["old"] != nil })
        servers[0].send(
            owner, #"{"op":"pub","subject":"s","value":"old"}"#, #"{"op":"pub","subject":"old","value":1}"#,
            #"{"op":"pub","subject":"s","value":"new"}"#, #"{"op":"pub","subject":"new","value":2}"#)
        #expect(
            servers[1].lines(of: reader, count: 2) == [
                #"{"ev":"next","sid":"f","value":1}"#, #"{"ev":"next","sid":"f","value":2}"#,
            ])
        servers[1].send(reader, #"{"op":"unsub","sid":"f"}"#)
        #expect(eventually { servers[1].run { servers.replicas(on: 1)?["old"] == nil } })
    }
}
