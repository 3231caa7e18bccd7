import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// Sessions on a loop that does not own the subjects read them through replicas fed by the
/// owner (decision 0011's second step): loop 0, the group's first server, owns the subjects;
/// loop 1's `sub`s wait for a replica, then get what a `sub` on loop 0 gets. Cross-thread: CI
/// runs these under the thread sanitizer.
@Suite struct SubjectReplicaTests {
    /// A subscriber on loop 1 gets every value published on loop 0, in order; loop 0's `pub`
    /// counts it among its receivers once loop 1 has told it.
    @Test func aSubscriberOnAnotherLoopGetsTheOwnersValuesInOrder() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let subscriber = servers[1].connect()
        let publisher = servers[0].connect()
        // The reply comes once the owner has answered, after the request.
        #expect(servers[1].send(subscriber, #"{"op":"sub","subject":"s","sid":"a","ref":1}"#).isEmpty)
        #expect(servers[1].lines(of: subscriber, count: 1) == [#"{"ok":true,"ref":1,"sid":"a"}"#])
        let counted = eventually {
            servers[0].send(publisher, #"{"op":"pub","subject":"s","value":-1,"ref":"r"}"#)
                == [#"{"ok":true,"ref":"r","receivers":1}"#]
        }
        #expect(counted)
        for value in 0..<300 { servers[0].send(publisher, #"{"op":"pub","subject":"s","value":\#(value)}"#) }
        var values: [String] = []
        #expect(
            eventually {
                values += servers[1].lines(of: subscriber)
                return values.last == #"{"ev":"next","sid":"a","value":299}"#
            })
        let expected = (0..<300).map { #"{"ev":"next","sid":"a","value":\#($0)}"# }
        #expect(Array(values.drop { $0 != expected[0] }) == expected)
    }

    /// A replay subject's replica replays what the subject keeps, resumes from a position,
    /// and goes on with the values published after it was made.
    @Test func aReplayReplicaReplaysAndResumes() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(owner, #"{"op":"create","subject":"r","kind":"replay","capacity":3}"#)
        for value in 1...5 { servers[0].send(owner, #"{"op":"pub","subject":"r","value":\#(value)}"#) }
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"r","sid":"a","positions":true}"#)
        let lines = try #require(servers[1].lines(of: reader, count: 4))
        #expect(lines.first == #"{"ok":true,"sid":"a"}"#)
        let replayed = Array(lines.dropFirst())
        #expect(replayed.map { Self.value(of: $0) } == ["3", "4", "5"])
        let position = try #require(Self.position(of: replayed[1]))
        #expect(position.hasSuffix(":4"))
        // The replica is here: loop 1 answers at once.
        let answered = servers[1].send(
            reader, #"{"op":"sub","subject":"r","sid":"b","from":"\#(position)","ref":2}"#)
        #expect(answered.count == 2)
        servers[0].send(owner, #"{"op":"pub","subject":"r","value":6}"#)
        let after = try #require(servers[1].lines(of: reader, count: 2).map { answered + $0 })
        #expect(after[0] == #"{"ok":true,"ref":2,"sid":"b","resumed":true}"#)
        #expect(after[1].hasPrefix(#"{"ev":"next","sid":"b","value":5,"pos":""#))
        #expect(
            Set(after[2...].map { $0.prefix(26) }) == [#"{"ev":"next","sid":"a","va"#, #"{"ev":"next","sid":"b","va"#])
        #expect(after[2...].allSatisfy { Self.value(of: $0) == "6" })
    }

    /// A behavior subject's replica starts from its current value.
    @Test func aBehaviorReplicaStartsFromTheCurrentValue() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"b","kind":"behavior","value":0}"#,
            #"{"op":"pub","subject":"b","value":{"on":true}}"#)
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"b","sid":"a"}"#)
        #expect(
            servers[1].lines(of: reader, count: 2) == [
                #"{"ok":true,"sid":"a"}"#, #"{"ev":"next","sid":"a","value":{"on":true}}"#,
            ])
    }

    /// The subject's end reaches the subscriptions on loop 1 as it reaches loop 0's: completed,
    /// failed, and deleted (whose name is free again for a new subject).
    @Test func theSubjectsEndReachesEveryLoop() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        servers[1].send(
            reader, #"{"op":"sub","subject":"c","sid":"c"}"#, #"{"op":"sub","subject":"e","sid":"e"}"#,
            #"{"op":"sub","subject":"d","sid":"d"}"#, #"{"op":"ping","ref":"ready"}"#)
        #expect(
            servers[1].lines(of: reader, count: 4) == [
                #"{"ok":true,"sid":"c"}"#, #"{"ok":true,"sid":"e"}"#, #"{"ok":true,"sid":"d"}"#,
                #"{"ok":true,"ref":"ready"}"#,
            ])
        servers[0].send(
            owner, #"{"op":"complete","subject":"c"}"#, #"{"op":"error","subject":"e","message":"broken"}"#,
            #"{"op":"delete","subject":"d"}"#)
        let ends = servers[1].lines(of: reader, count: 3)
        #expect(
            ends == [
                #"{"ev":"completed","sid":"c"}"#,
                #"{"ev":"error","sid":"e","code":"subject_error","message":"broken"}"#,
                #"{"ev":"completed","sid":"d"}"#,
            ])
        servers[0].send(owner, #"{"op":"create","subject":"d","kind":"behavior","value":"new"}"#)
        servers[1].send(reader, #"{"op":"sub","subject":"d","sid":"d2"}"#)
        #expect(
            servers[1].lines(of: reader, count: 2) == [
                #"{"ok":true,"sid":"d2"}"#, #"{"ev":"next","sid":"d2","value":"new"}"#,
            ])
        // A late subscriber of the completed subject gets its end at once.
        servers[1].send(reader, #"{"op":"sub","subject":"c","sid":"c2"}"#)
        #expect(
            servers[1].lines(of: reader, count: 2) == [#"{"ok":true,"sid":"c2"}"#, #"{"ev":"completed","sid":"c2"}"#])
    }

    /// Loop 1 asks once for a subject however many of its sessions read it, tells the owner
    /// how many do, and lets the replica go when the last one ends.
    @Test func aLoopHoldsOneReplicaASubjectAndLetsItGo() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(owner, #"{"op":"create","subject":"s","kind":"subject"}"#)
        let readers = servers[1].connect(count: 3)
        for reader in readers {
            servers[1].send(reader, #"{"op":"sub","subject":"s","sid":"a"}"#)
            #expect(servers[1].ask(reader, #"{"op":"ping","ref":"p"}"#, ref: "p") != nil)
        }
        let feeds = { servers[0].run { servers.owned("s")?.replicaSubscribers } }
        #expect(eventually { feeds().map { $0 == (feeds: 1, told: 3, named: 3) } ?? false })
        #expect(servers[1].run { servers.replicas(on: 1)?["s"]?.subscriberCount } == 3)
        for reader in readers { servers[1].send(reader, #"{"op":"unsub","sid":"a"}"#) }
        #expect(eventually { feeds().map { $0 == (feeds: 0, told: 0, named: 0) } ?? false })
        #expect(servers[1].run { servers.replicas(on: 1)?["s"] } == nil)
        // Asked for again, it is a new replica, with the values published meanwhile gone by.
        servers[0].send(owner, #"{"op":"pub","subject":"s","value":1}"#)
        servers[1].send(readers[0], #"{"op":"sub","subject":"s","sid":"b"}"#)
        #expect(servers[1].ask(readers[0], #"{"op":"ping","ref":"q"}"#, ref: "q") != nil)
        servers[0].send(owner, #"{"op":"pub","subject":"s","value":2}"#)
        #expect(servers[1].lines(of: readers[0], count: 1) == [#"{"ev":"next","sid":"b","value":2}"#])
    }

    /// A subject the owner would not give a `sub` is refused on loop 1 with the owner's error,
    /// in its place: the requests after it are answered after it.
    @Test func aRefusalIsTheOwnersAndKeepsItsPlace() {
        let servers = LoopServers(count: 2) { $0.autoCreate = false }
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let immediate = servers[1].send(
            reader, #"{"op":"sub","subject":"none","ref":1}"#, #"{"op":"ping","ref":2}"#)
        #expect(immediate.isEmpty)
        #expect(
            servers[1].lines(of: reader, count: 2) == [
                #"{"ok":false,"ref":1,"code":"unknown_subject","message":"no subject 'none' (auto_create is off)"}"#,
                #"{"ok":true,"ref":2}"#,
            ])
    }

    /// A `pub` on loop 1 is published by the owner: subscribers on both loops get the values
    /// in order, and the replies, counting both, come in request order.
    @Test func aPubOnAnotherLoopReachesEveryLoop() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let local = servers[0].connect()
        servers[0].send(local, #"{"op":"sub","subject":"s","sid":"a"}"#)
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"s","sid":"b"}"#)
        #expect(servers[1].ask(reader, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
        let publisher = servers[1].connect()
        // Loop 1 tells the owner of its subscriber at the end of a turn: ask until it counts.
        #expect(
            eventually {
                servers[1].send(publisher, #"{"op":"pub","subject":"s","value":-1,"ref":0}"#)
                return servers[1].lines(of: publisher, count: 1) == [#"{"ok":true,"ref":0,"receivers":2}"#]
            })
        // The answers come while the test goes on sending: every line is kept.
        var replies = servers[1].send(publisher, #"{"op":"pub","subject":"s","value":0,"ref":1}"#)
        #expect(replies.isEmpty)
        for value in 1..<100 { replies += servers[1].send(publisher, #"{"op":"pub","subject":"s","value":\#(value)}"#) }
        replies += servers[1].send(publisher, #"{"op":"ping","ref":2}"#)
        #expect(
            (replies + (servers[1].lines(of: publisher, count: 2 - replies.count) ?? [])) == [
                #"{"ok":true,"ref":1,"receivers":2}"#, #"{"ok":true,"ref":2}"#,
            ])
        let expected = { (sid: String) in (0..<100).map { #"{"ev":"next","sid":"\#(sid)","value":\#($0)}"# } }
        var onLoop0: [String] = []
        var onLoop1: [String] = []
        #expect(
            eventually {
                onLoop0 += servers[0].lines(of: local)
                onLoop1 += servers[1].lines(of: reader)
                return onLoop0.last == expected("a").last && onLoop1.last == expected("b").last
            })
        #expect(Array(onLoop0.drop { $0 != expected("a")[0] }) == expected("a"))
        #expect(Array(onLoop1.drop { $0 != expected("b")[0] }) == expected("b"))
    }

    /// The owner's refusal of a `pub` from loop 1 is its reply, in its place, with or without
    /// a `ref`.
    @Test func aPubRefusedByTheOwnerIsAnsweredInItsPlace() {
        let servers = LoopServers(count: 2) { $0.autoCreate = false }
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"done","kind":"subject"}"#, #"{"op":"complete","subject":"done"}"#)
        let publisher = servers[1].connect()
        let immediate = servers[1].send(
            publisher, #"{"op":"pub","subject":"none","value":1}"#, #"{"op":"pub","subject":"done","value":1,"ref":1}"#,
            #"{"op":"ping","ref":2}"#)
        #expect(immediate.isEmpty)
        #expect(
            servers[1].lines(of: publisher, count: 3) == [
                #"{"ok":false,"code":"unknown_subject","message":"no subject 'none' (auto_create is off)"}"#,
                #"{"ok":false,"ref":1,"code":"terminated","message":"subject 'done' is terminated"}"#,
                #"{"ok":true,"ref":2}"#,
            ])
    }

    /// Hundreds of `pub`s at the owner at once, quiet ones and refused ones among them, are
    /// answered one at a time, each in its place (`CorkedTransport` drops what went out in bulk).
    @Test func manyPubsAtTheOwnerAreAnsweredInRequestOrder() {
        let servers = LoopServers(count: 2) { $0.autoCreate = false }
        defer { servers.shutdown() }
        servers[0].send(servers[0].connect(), #"{"op":"create","subject":"s","kind":"subject"}"#)
        let publisher = servers[1].connect()
        let requests = (1...600).map { index in
            switch index % 3 {
            case 0: #"{"op":"pub","subject":"none","value":\#(index),"ref":\#(index)}"#
            case 1: #"{"op":"ping","ref":\#(index)}"#
            default: #"{"op":"pub","subject":"s","value":\#(index)}"#
            }
        }
        // The first ping's reply comes at once; the rest wait behind the first `pub`.
        let immediate = servers[1].send(publisher, requests)
        let later = servers[1].lines(of: publisher, count: 400 - immediate.count) ?? []
        let refs = (immediate + later).map { line in
            Int(line.split(separator: #""ref":"#).last?.prefix(while: \.isNumber) ?? "") ?? 0
        }
        #expect(refs == (1...600).filter { $0 % 3 != 2 })
    }

    /// A burst of quiet `pub`s crosses as one request; a value the owner refuses among them is
    /// answered in its place, and the others are published, in order, as on one loop.
    @Test func aBurstOfPubsCrossesTogetherAndARefusalAmongThemKeepsItsPlace() {
        let servers = LoopServers(count: 2) { $0.maxRetainedBytes = 1000 }
        defer { servers.shutdown() }
        let subscriber = servers[0].connect()
        servers[0].send(
            subscriber, #"{"op":"create","subject":"r","kind":"replay","capacity":10}"#,
            #"{"op":"sub","subject":"r","sid":"a"}"#)
        let publisher = servers[1].connect()
        let big = String(repeating: "x", count: 2000)
        let immediate = servers[1].send(
            publisher, #"{"op":"pub","subject":"r","value":1}"#, #"{"op":"pub","subject":"r","value":"\#(big)"}"#,
            #"{"op":"pub","subject":"r","value":3}"#, #"{"op":"ping","ref":9}"#)
        #expect(immediate.isEmpty)
        let lines = servers[1].lines(of: publisher, count: 2)
        #expect(lines?.first?.hasPrefix(#"{"ok":false,"code":"limit","message":"subject 'r' keeps its values"#) == true)
        #expect(lines?.last == #"{"ok":true,"ref":9}"#)
        let events = servers[0].lines(of: subscriber, count: 2)?.map {
            $0.replacingOccurrences(of: #","seq":\d+"#, with: "", options: .regularExpression)
        }
        #expect(events == [#"{"ev":"next","sid":"a","value":1}"#, #"{"ev":"next","sid":"a","value":3}"#])
    }

    /// `complete`, `error` and `delete` on loop 1 are the owner's: the subscribers of both loops
    /// get the end, and the replies, refusals too, come in request order, the event after them.
    @Test func endingsOnAnotherLoopAreTheOwners() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let local = servers[0].connect()
        servers[0].send(
            local, #"{"op":"sub","subject":"c","sid":"c0"}"#, #"{"op":"sub","subject":"e","sid":"e0"}"#,
            #"{"op":"sub","subject":"d","sid":"d0"}"#)
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"c","sid":"c1"}"#)
        #expect(servers[1].ask(reader, #"{"op":"ping","ref":"ready"}"#, ref: "ready") != nil)
        let immediate = servers[1].send(
            reader, #"{"op":"complete","subject":"c","ref":1}"#,
            #"{"op":"error","subject":"e","message":"broken","ref":2}"#, #"{"op":"delete","subject":"d","ref":3}"#,
            #"{"op":"complete","subject":"c","ref":4}"#, #"{"op":"delete","subject":"none","ref":5}"#,
            #"{"op":"ping","ref":6}"#)
        #expect(immediate.isEmpty)
        #expect(
            servers[1].lines(of: reader, count: 7) == [
                #"{"ok":true,"ref":1}"#, #"{"ok":true,"ref":2}"#, #"{"ok":true,"ref":3}"#,
                #"{"ok":false,"ref":4,"code":"terminated","message":"subject 'c' is already terminated"}"#,
                #"{"ok":false,"ref":5,"code":"unknown_subject","message":"no subject 'none'"}"#,
                #"{"ok":true,"ref":6}"#, #"{"ev":"completed","sid":"c1"}"#,
            ])
        #expect(
            servers[0].lines(of: local, count: 3) == [
                #"{"ev":"completed","sid":"c0"}"#,
                #"{"ev":"error","sid":"e0","code":"subject_error","message":"broken"}"#,
                #"{"ev":"completed","sid":"d0"}"#,
            ])
        #expect(servers[0].run { servers.owned("d") } == nil)
    }

    /// `create` and `list` on loop 1 are the owner's: the subjects are made there, by its
    /// rules (a shape that does not match is `kind_mismatch`), a bad field is refused at once,
    /// every reply in request order; `list` on either loop counts the subscriptions of both,
    /// and `stats` and `/metrics` on loop 1 count the owner's subjects.
    @Test func createAndListOnAnotherLoopAreTheOwners() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let reader = servers[1].connect()
        let immediate = servers[1].send(
            reader, #"{"op":"create","subject":"r","kind":"replay","capacity":2,"ref":1}"#,
            #"{"op":"create","subject":"r","kind":"behavior","ref":2}"#,
            #"{"op":"create","subject":"x","kind":"stream","ref":3}"#,
            #"{"op":"create","subject":"m","kind":"map","max_keys":5,"ref":4}"#,
            #"{"op":"create","subject":"r","kind":"replay","capacity":2,"slow_consumer":"drop","ref":5}"#)
        #expect(immediate.isEmpty)
        #expect(
            servers[1].lines(of: reader, count: 5) == [
                #"{"ok":true,"ref":1}"#,
                #"{"ok":false,"ref":2,"code":"kind_mismatch","message":"subject 'r' exists as replay (capacity 2)"}"#,
                #"{"ok":false,"ref":3,"code":"bad_request","message":"field 'kind' must be one of subject, replay, behavior, map; got 'stream'"}"#,
                #"{"ok":true,"ref":4}"#, #"{"ok":true,"ref":5}"#,
            ])
        #expect(servers[0].run { servers.owned("r")?.capacity } == 2)
        #expect(servers[0].run { servers.owned("r")?.label.slowConsumer } == .drop)
        #expect(servers[0].run { servers.owned("m")?.map?.maxKeys } == 5)
        #expect(servers[1].run { servers.subjectCount(on: 1) } == 0)

        let local = servers[0].connect()
        servers[0].send(local, #"{"op":"sub","subject":"r","sid":"a"}"#)
        servers[1].send(reader, #"{"op":"sub","subject":"r","sid":"b"}"#)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"sid":"b"}"#])
        let expected = #"{"subject":"r","kind":"replay","capacity":2,"subscribers":2,"published":0,"pos":""#
        #expect(
            eventually {
                servers[1].ask(reader, #"{"op":"list","prefix":"r","ref":"l"}"#, ref: "l")?.contains(expected) == true
            })
        let onOwner = try #require(servers[0].ask(local, #"{"op":"list","ref":"l"}"#, ref: "l"))
        #expect(onOwner.contains(expected))
        #expect(onOwner.contains(#"{"subject":"m","kind":"map","keys":0,"max_keys":5,"subscribers":0,"#))
        // `stats` and `/metrics` on loop 1 count the owner's subjects.
        #expect(servers[1].ask(reader, #"{"op":"stats","ref":"s"}"#, ref: "s")?.contains(#","subjects":2,"#) == true)
        #expect(servers[1].metrics().contains("\nrunnel_subjects 2\n"))
    }

    /// A map read and written on loop 1: a subscription there gets the owner's keys, `synced`,
    /// then each change; a `from` within the changes the owner keeps resumes after it there; a
    /// subscription to one key gets that key's; a keyed `pub` and a removal on loop 1 are the
    /// owner's, answered in their place, and reach both loops.
    @Test func aMapIsReadAndWrittenOnAnotherLoop() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"m","kind":"map"}"#, #"{"op":"pub","subject":"m","key":"a","value":1}"#,
            #"{"op":"pub","subject":"m","key":"b","value":2}"#, #"{"op":"pub","subject":"m","key":"a","delete":true}"#,
            #"{"op":"sub","subject":"m","sid":"o"}"#)
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"m","sid":"s","positions":true}"#)
        let opening = try #require(servers[1].lines(of: reader, count: 3))
        #expect(opening[0] == #"{"ok":true,"sid":"s"}"#)
        #expect(opening[1].hasPrefix(#"{"ev":"next","sid":"s","key":"b","value":2,"pos":"#))
        let position = try #require(Self.position(of: opening[2]))
        #expect(position.hasSuffix(":3"))
        let first = position.dropLast() + "1"
        let resumed = servers[1].send(
            reader, #"{"op":"sub","subject":"m","sid":"r","from":"\#(first)"}"#,
            #"{"op":"sub","subject":"m","sid":"k","ops":[{"op":"filter","expr":"$key == \"b\""}]}"#)
        #expect(resumed.count == 7 && resumed[0] == #"{"ok":true,"sid":"r","resumed":true}"#)
        #expect(resumed[1].hasPrefix(#"{"ev":"next","sid":"r","key":"b","value":2,"pos":"#))
        #expect(resumed[2].hasPrefix(#"{"ev":"removed","sid":"r","key":"a","reason":"deleted","pos":"#))
        #expect(resumed[3] == #"{"ev":"synced","sid":"r","pos":"\#(position)"}"#)
        #expect(
            resumed[4...] == [
                #"{"ok":true,"sid":"k"}"#, #"{"ev":"next","sid":"k","key":"b","value":2}"#,
                #"{"ev":"synced","sid":"k"}"#,
            ])

        let immediate = servers[1].send(
            reader, #"{"op":"pub","subject":"m","key":"c","value":3,"ref":1}"#,
            #"{"op":"pub","subject":"m","key":"b","delete":true,"ref":2}"#,
            #"{"op":"pub","subject":"m","key":"z","delete":true,"value":1,"ref":3}"#,
            #"{"op":"pub","subject":"m","key":"c","value":4}"#)
        #expect(immediate.isEmpty)
        let answered = try #require(servers[1].lines(of: reader, count: 3 + 3 + 3 + 1))
        // Loop 0's `o`, loop 1's `s`, `r` and `k` (which follows b); `s` and `r` are sent
        // positions, cut off here.
        #expect(
            answered.prefix(3) == [
                #"{"ok":true,"ref":1,"receivers":4}"#, #"{"ok":true,"ref":2,"receivers":4}"#,
                #"{"ok":false,"ref":3,"code":"bad_request","message":"a pub with 'delete' carries no 'value'"}"#,
            ])
        #expect(
            answered.dropFirst(3).map { $0.components(separatedBy: #","pos""#)[0] }.sorted()
                == [
                    #"{"ev":"next","sid":"r","key":"c","value":3"#, #"{"ev":"next","sid":"r","key":"c","value":4"#,
                    #"{"ev":"next","sid":"s","key":"c","value":3"#, #"{"ev":"next","sid":"s","key":"c","value":4"#,
                    #"{"ev":"removed","sid":"k","key":"b","reason":"deleted"}"#,
                    #"{"ev":"removed","sid":"r","key":"b","reason":"deleted""#,
                    #"{"ev":"removed","sid":"s","key":"b","reason":"deleted""#,
                ].sorted())
        var onOwner: [String] = []
        #expect(
            eventually {
                onOwner += servers[0].lines(of: owner)
                return onOwner.suffix(3) == [
                    #"{"ev":"next","sid":"o","key":"c","value":3}"#,
                    #"{"ev":"removed","sid":"o","key":"b","reason":"deleted"}"#,
                    #"{"ev":"next","sid":"o","key":"c","value":4}"#,
                ]
            })
        #expect(servers[0].run { servers.owned("m")?.map.map { Array($0.keys.keys) } } == ["c"])
    }

    /// A `sub` on loop 1 after its own session's `pub` reads the replica once the value has
    /// reached it: a behavior's new subscription starts from the value just published.
    @Test func aSubAfterItsOwnPubSeesIt() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(owner, #"{"op":"create","subject":"b","kind":"behavior","value":0}"#)
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"b","sid":"held"}"#)
        #expect(servers[1].lines(of: reader, count: 2)?.last == #"{"ev":"next","sid":"held","value":0}"#)
        let immediate = servers[1].send(
            reader, #"{"op":"pub","subject":"b","value":1}"#, #"{"op":"sub","subject":"b","sid":"x","ref":2}"#)
        #expect(immediate.isEmpty)
        let lines = servers[1].lines(of: reader, count: 3) ?? []
        #expect(
            lines.filter { $0.contains(#""sid":"x""#) } == [
                #"{"ok":true,"ref":2,"sid":"x"}"#, #"{"ev":"next","sid":"x","value":1}"#,
            ])
        #expect(lines.contains(#"{"ev":"next","sid":"held","value":1}"#))
    }

    /// A `from` beyond what loop 1's replica has received (a position a subscriber elsewhere
    /// was given) waits for it, then resumes there.
    @Test func aFromBeyondTheReplicaWaitsForIt() throws {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        servers[0].send(
            owner, #"{"op":"create","subject":"r","kind":"replay","capacity":10}"#,
            #"{"op":"pub","subject":"r","value":0}"#)
        let holder = servers[1].connect()
        servers[1].send(holder, #"{"op":"sub","subject":"r","sid":"h","positions":true}"#)
        let first = try #require(servers[1].lines(of: holder, count: 2).flatMap { Self.position(of: $0[1]) })
        let third = first.dropLast() + "3"
        let resumer = servers[1].connect()
        // Loop 1 is busy here while the owner publishes: its replica has not received the values.
        let atOnce = servers[1].run {
            servers[0].send(owner, #"{"op":"pub","subject":"r","value":1}"#, #"{"op":"pub","subject":"r","value":2}"#)
            resumer.transport.receive(#"{"op":"sub","subject":"r","sid":"b","from":"\#(third)"}"#)
            return resumer.transport.takeLines()
        }
        #expect(atOnce.isEmpty)
        #expect(servers[1].lines(of: resumer, count: 1) == [#"{"ok":true,"sid":"b","resumed":true}"#])
        servers[0].send(owner, #"{"op":"pub","subject":"r","value":3}"#)
        #expect(
            servers[1].lines(of: resumer, count: 1)?.first?.hasPrefix(#"{"ev":"next","sid":"b","value":3,"pos":"#)
                == true)
    }

    /// A `create` that gives an existing subject its own `slow_consumer` reaches loop 1's
    /// replica with the next value, before it is delivered there.
    @Test func aSubjectsNewPolicyReachesItsReplica() {
        let servers = LoopServers(count: 2)
        defer { servers.shutdown() }
        let owner = servers[0].connect()
        let reader = servers[1].connect()
        servers[1].send(reader, #"{"op":"sub","subject":"s","sid":"a"}"#)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ok":true,"sid":"a"}"#])
        let policy = { servers[1].run { servers.replicas(on: 1)?["s"]?.label.slowConsumer } }
        #expect(policy() == nil)
        servers[0].send(
            owner, #"{"op":"create","subject":"s","kind":"subject","slow_consumer":"drop"}"#,
            #"{"op":"pub","subject":"s","value":1}"#)
        #expect(servers[1].lines(of: reader, count: 1) == [#"{"ev":"next","sid":"a","value":1}"#])
        #expect(policy() == .drop)
    }

    private static func value(of line: String) -> String? {
        guard let start = line.range(of: #""value":"#)?.upperBound else { return nil }
        return String(line[start...].prefix { $0 != "," && $0 != "}" })
    }

    private static func position(of line: String) -> String? {
        guard let start = line.range(of: #""pos":""#)?.upperBound else { return nil }
        return String(line[start...].prefix { $0 != "\"" })
    }
}
