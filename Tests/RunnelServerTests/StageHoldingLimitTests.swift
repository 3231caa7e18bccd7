import Runnel
import RunnelProtocol
import Testing

@testable import RunnelServer

/// `delay`, `flattenMap` and `merge` hold values or inner subscriptions; `max_buffer_values`
/// bounds them like the accumulating stages.
@Suite struct StageHoldingLimitTests {
    @Test func delayHoldingMoreThanTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"delay","seconds":10}]"#)
        try h.pub(["1", "2"])
        #expect(h.values() == [])
        try h.pub("3")
        #expect(h.values() == ["error eval 0 limit"])
        // The error is not delayed and cancels the held values' timers.
        #expect(h.scheduler.pendingCount == 0)
        h.advance(10)
        #expect(h.values() == [])
    }

    @Test func delayGivesBackWhatItHasSent() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"delay","seconds":1}]"#)
        for round in 0..<5 {
            try h.pub(["\(2 * round)", "\(2 * round + 1)"])
            h.advance(1)
            #expect(h.values() == ["\(2 * round)", "\(2 * round + 1)"])
        }
        h.complete()
        h.advance(1)
        #expect(h.values() == ["completed"])
    }

    @Test func flattenMapWithMoreOpenInnerSubscriptionsThanTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"flattenMap","expr":"."}]"#)
        try h.pub(["\"a\"", "\"b\""])
        try h.pub("1", to: "a")
        #expect(h.values() == ["1"])
        try h.pub("\"c\"")
        #expect(h.values() == ["error eval 0 limit"])
        try h.pub("2", to: "b")
        #expect(h.values() == [])
    }

    @Test func flattenMapCountsOnlyInnerSubscriptionsStillOpen() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"flattenMap","expr":"."}]"#)
        try h.pub(["\"a\"", "\"b\""])
        h.complete("a")
        try h.pub("\"c\"")
        try h.pub("3", to: "c")
        h.complete("b")
        try h.pub("\"d\"")
        try h.pub("4", to: "d")
        #expect(h.values() == ["3", "4"])
    }

    @Test func mergeOfMoreSubjectsThanTheLimitFailsTheSub() throws {
        let h = StageHarness(maxBufferValues: 2)
        #expect(throws: ProtocolError(.limit, "merge of 3 subjects, over max_buffer_values (2)", stage: 1)) {
            _ = try h.compile(#"[{"op":"map","expr":"."},{"op":"merge","subjects":["a","b","c"]}]"#)
        }
        let two = try StageHarness(maxBufferValues: 2).run(#"[{"op":"merge","subjects":["a","b"]}]"#)
        try two.pub("1", to: "b")
        #expect(two.values() == ["1"])
    }
}
