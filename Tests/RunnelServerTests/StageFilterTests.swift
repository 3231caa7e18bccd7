import Runnel
import Testing

@testable import RunnelServer

@Suite struct StageFilterTests {
    @Test func filterPassesExactBytes() throws {
        let h = try StageHarness().run(#"[{"op":"filter","expr":".load > 0.9"}]"#)
        try h.pub([#"{"load":0.95 ,"h":"a"}"#, #"{"load":0.2}"#, #"{"load":1E0}"#])
        #expect(h.values() == [#"{"load":0.95 ,"h":"a"}"#, #"{"load":1E0}"#])
    }

    @Test func filterEvalError() throws {
        let h = try StageHarness().run(#"[{"op":"filter","expr":". > 1"}]"#)
        try h.pub(["2", "\"x\"", "3"])
        let values = h.values()
        #expect(values.count == 2 && values[0] == "2" && values[1].hasPrefix("error eval 0 filter:"))
    }

    @Test func ignoreComparesStructurally() throws {
        let h = try StageHarness().run(#"[{"op":"ignore","value":{"a":1}}]"#)
        try h.pub([#"{"a":1.0}"#, #"{"a":2}"#, "1"])
        #expect(h.values() == [#"{"a":2}"#, "1"])
    }

    @Test func ignoreValuesPassesTerminals() throws {
        let h = try StageHarness().run(#"[{"op":"ignoreValues"}]"#)
        try h.pub(["1", "2"])
        h.complete()
        #expect(h.values() == ["completed"])
    }

    @Test func distinctUntilChanged() throws {
        let h = try StageHarness().run(#"[{"op":"distinctUntilChanged"}]"#)
        try h.pub(["1", "1.0", "2", "1", "1"])
        #expect(h.values() == ["1", "2", "1"])
    }

    @Test func takeAndSkip() throws {
        let take = try StageHarness().run(#"[{"op":"take","count":2}]"#)
        try take.pub(["1", "2", "3"])
        #expect(take.values() == ["1", "2", "completed"])
        let none = try StageHarness().run(#"[{"op":"take","count":0}]"#)
        #expect(none.values() == ["completed"])
        let skip = try StageHarness().run(#"[{"op":"skip","count":2}]"#)
        try skip.pub(["1", "2", "3"])
        #expect(skip.values() == ["3"])
    }

    @Test func takeLastSendsTheLastValuesAtCompletion() throws {
        let h = try StageHarness().run(#"[{"op":"takeLast","count":2}]"#)
        try h.pub(["1", "2.0", "3.0"])
        #expect(h.values() == [])
        h.complete()
        #expect(h.values() == ["2.0", "3.0", "completed"])
    }

    @Test func takeLastOverTheLimitEndsOnceMoreValuesArrive() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"takeLast","count":5}]"#)
        try h.pub(["1", "2"])
        #expect(h.values() == [])
        try h.pub("3")
        #expect(h.values() == ["error eval 0 limit"])
    }

    @Test func takeWhileAndSkipWhile() throws {
        let take = try StageHarness().run(#"[{"op":"takeWhile","expr":". < 3"}]"#)
        try take.pub(["1", "2", "3", "1"])
        #expect(take.values() == ["1", "2", "completed"])
        let skip = try StageHarness().run(#"[{"op":"skipWhile","expr":". < 3"}]"#)
        try skip.pub(["1", "2", "3", "1"])
        #expect(skip.values() == ["3", "1"])
    }

    @Test func takeUntilBlockAndSkipUntilBlock() throws {
        let take = try StageHarness().run(#"[{"op":"takeUntilBlock","expr":". == 3"}]"#)
        try take.pub(["1", "2", "3", "4"])
        #expect(take.values() == ["1", "2", "completed"])
        let skip = try StageHarness().run(#"[{"op":"skipUntilBlock","expr":". == 3"}]"#)
        try skip.pub(["1", "2", "3", "4"])
        #expect(skip.values() == ["3", "4"])
    }
}
