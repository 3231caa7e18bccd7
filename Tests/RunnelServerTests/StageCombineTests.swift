import Runnel
import Testing

@testable import RunnelServer

@Suite struct StageCombineTests {
    @Test func combineLatestWithPairsExactBytes() throws {
        let h = try StageHarness().run(#"[{"op":"combineLatestWith","subject":"b"}]"#)
        try h.pub("1.0")
        try h.pub("\"x\"", to: "b")
        try h.pub("2")
        h.complete()
        h.complete("b")
        #expect(h.take() == [#"src [1.0,"x"]"#, #"src [2,"x"]"#, "completed"])
    }

    @Test func zipWithPairsInOrder() throws {
        let h = try StageHarness().run(#"[{"op":"zipWith","subject":"b"}]"#)
        try h.pub(["1", "2"])
        try h.pub(["10", "20.0", "30"], to: "b")
        h.complete()
        #expect(h.values() == ["[1,10]", "[2,20.0]", "completed"])
    }

    @Test func zipWithSideRunningAheadPastTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"zipWith","subject":"b"}]"#)
        try h.pub(["1", "2"], to: "b")
        try h.pub("1")
        try h.pub(["3", "4"], to: "b")
        #expect(h.values() == ["[1,1]", "error eval 0 limit"])
    }

    @Test func mergeCompletesWhenAllHave() throws {
        let h = try StageHarness().run(#"[{"op":"merge","subjects":["b","c"]}]"#)
        try h.pub("1")
        try h.pub("2", to: "b")
        try h.pub("3", to: "c")
        h.complete()
        h.complete("b")
        #expect(h.take() == ["src 1", "b 2", "c 3"])
        h.complete("c")
        #expect(h.take() == ["completed"])
    }

    @Test func concatContinuesWithTheOtherSubject() throws {
        let h = try StageHarness().run(#"[{"op":"concat","subject":"b"}]"#)
        try h.pub("1")
        try h.pub("99", to: "b")
        h.complete()
        try h.pub("2", to: "b")
        h.complete("b")
        #expect(h.take() == ["src 1", "b 2", "completed"])
    }

    @Test func takeUntilTheOtherSubjectsValue() throws {
        let h = try StageHarness().run(#"[{"op":"takeUntil","subject":"stop"}]"#)
        try h.pub("1")
        try h.pub("null", to: "stop")
        try h.pub("2")
        #expect(h.values() == ["1", "completed"])
        // The other subject's error is ignored; its completion ends the stream.
        let errorIgnored = try StageHarness().run(#"[{"op":"takeUntil","subject":"stop"}]"#)
        errorIgnored.fail("stop")
        try errorIgnored.pub("1")
        #expect(errorIgnored.values() == ["1"])
        let completed = try StageHarness().run(#"[{"op":"takeUntil","subject":"stop"}]"#)
        completed.complete("stop")
        #expect(completed.values() == ["completed"])
    }

    @Test func flattenMapMergesTheNamedSubjects() throws {
        let h = try StageHarness().run(#"[{"op":"flattenMap","expr":"\"room.\" + .r"}]"#)
        try h.pub(#"{"r":"a"}"#)
        try h.pub("1", to: "room.a")
        try h.pub(#"{"r":"b"}"#)
        try h.pub("2", to: "room.b")
        try h.pub("3", to: "room.a")
        #expect(h.take() == ["room.a 1", "room.b 2", "room.a 3"])
        try h.pub(#"{"r":7}"#)
        let last = h.values()
        #expect(last.count == 1 && last[0].hasPrefix("error eval 0 flattenMap:"), "\(last)")
    }

    @Test func switchToLatestFollowsTheLatestName() throws {
        let h = try StageHarness().run(#"[{"op":"switchToLatest"}]"#)
        try h.pub("\"x\"")
        try h.pub("1", to: "x")
        try h.pub("\"y\"")
        try h.pub("2", to: "x")
        try h.pub("3", to: "y")
        #expect(h.take() == ["x 1", "y 3"])
        try h.pub("\"bad name\"")
        let last = h.values()
        #expect(last.count == 1 && last[0].hasPrefix("error eval 0 switchToLatest: bad subject name"), "\(last)")
        let lookupFails = try StageHarness().run(#"[{"op":"switchToLatest","expr":".s"}]"#)
        try lookupFails.pub(#"{"s":"missing"}"#)
        #expect(lookupFails.values() == ["error eval 0 switchToLatest: no subject 'missing'"])
    }

    @Test func evalErrorDisposesTimersAndInnerSubscriptions() throws {
        let h = try StageHarness().run(
            #"[{"op":"delay","seconds":5},{"op":"combineLatestWith","subject":"b"},{"op":"map","expr":".[0] + 1"}]"#)
        try h.pub("1", to: "b")
        try h.pub("1")
        try h.pub("\"x\"")
        #expect(h.subject("b").subscriberCount == 1)
        h.advance(5)
        let values = h.values()
        #expect(values.count == 2 && values[0] == "2")
        #expect(values[1].hasPrefix("error eval 2 map:"))
        #expect(h.subject("b").subscriberCount == 0)
        #expect(h.source.subscriberCount == 0)
        #expect(h.scheduler.pendingCount == 0)
    }
}
