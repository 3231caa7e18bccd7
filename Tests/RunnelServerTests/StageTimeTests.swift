import Runnel
import Testing

@testable import RunnelServer

@Suite struct StageTimeTests {
    @Test func throttleSendsTheLatestAfterQuiet() throws {
        let h = try StageHarness().run(#"[{"op":"throttle","seconds":1}]"#)
        try h.pub(["1", "2"])
        h.advance(0.5)
        try h.pub("3")
        h.advance(0.9)
        #expect(h.values() == [])
        h.advance(0.1)
        #expect(h.values() == ["3"])
        try h.pub("4")
        h.complete()
        #expect(h.values() == ["4", "completed"])
    }

    @Test func throttleWithExprPassesFailingValuesAtOnce() throws {
        let h = try StageHarness().run(#"[{"op":"throttle","seconds":1,"expr":". < 10"}]"#)
        try h.pub("1")
        try h.pub("50")
        #expect(h.values() == ["50"])
        try h.pub("2")
        h.advance(1)
        #expect(h.values() == ["2"])
        #expect(h.scheduler.pendingCount == 0)
    }

    @Test func delayShiftsValuesAndCompletion() throws {
        let h = try StageHarness().run(#"[{"op":"delay","seconds":2}]"#)
        try h.pub("1")
        h.advance(1)
        try h.pub("2")
        h.complete()
        h.advance(1)
        #expect(h.values() == ["1"])
        h.advance(1)
        #expect(h.values() == ["2", "completed"])
    }

    @Test func delayDoesNotDelayErrors() throws {
        let h = try StageHarness().run(#"[{"op":"delay","seconds":2}]"#)
        try h.pub("1")
        h.fail()
        #expect(h.values() == ["error subject_error - boom"])
        h.advance(5)
        #expect(h.values() == [])
    }

    @Test func bufferWithTimeSendsWindowsWithExactBytes() throws {
        let h = try StageHarness().run(#"[{"op":"bufferWithTime","seconds":1}]"#)
        try h.pub(["1.0", "[ 2 ]"])
        h.advance(1)
        #expect(h.values() == ["[1.0,[ 2 ]]"])
        h.advance(3)
        #expect(h.values() == [])
        try h.pub("3")
        h.complete()
        #expect(h.values() == ["[3]", "completed"])
    }

    @Test func bufferWithTimeWindowPastTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"bufferWithTime","seconds":1}]"#)
        try h.pub(["1", "2"])
        h.advance(1)
        try h.pub(["3", "4"])
        #expect(h.values() == ["[1,2]"])
        try h.pub("5")
        #expect(h.values() == ["error eval 0 limit"])
        #expect(h.scheduler.pendingCount == 0)
    }

    @Test func timeoutIsEvalTimeout() throws {
        let h = try StageHarness().run(#"[{"op":"map","expr":"."},{"op":"timeout","seconds":3}]"#)
        h.advance(2)
        try h.pub("1")
        h.advance(1)
        #expect(h.values() == ["1", "error eval 1 timeout"])
    }

    @Test func sampleOnAnInterval() throws {
        let h = try StageHarness().run(#"[{"op":"sample","seconds":1}]"#)
        h.advance(1)
        #expect(h.values() == [])
        try h.pub(["1", "2"])
        h.advance(1)
        h.advance(1)
        #expect(h.values() == ["2", "2"])
        h.dispose()
        #expect(h.scheduler.pendingCount == 0)
    }

    @Test func sampleWithASubject() throws {
        let h = try StageHarness().run(#"[{"op":"sample","subject":"tick"}]"#)
        try h.pub("null", to: "tick")
        try h.pub("1")
        try h.pub("null", to: "tick")
        try h.pub("null", to: "tick")
        #expect(h.take() == ["src 1", "src 1"])
    }
}
