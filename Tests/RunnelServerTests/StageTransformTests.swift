import Runnel
import Testing

@testable import RunnelServer

@Suite struct StageTransformTests {
    @Test func mapComputesAndKeepsTheSubject() throws {
        let h = try StageHarness().run(#"[{"op":"map","expr":"{\"v\": . * 2, \"s\": $subject}"}]"#)
        try h.pub(["1.5", "4"])
        #expect(h.take() == [#"src {"v":3,"s":"src"}"#, #"src {"v":8,"s":"src"}"#])
    }

    @Test func mapEvalErrorEndsTheSubscriptionNamingTheStage() throws {
        let h = try StageHarness().run(#"[{"op":"take","count":5},{"op":"map","expr":". + 1"}]"#)
        try h.pub(["1", "\"a\"", "3"])
        let events = h.take()
        #expect(events.count == 2)
        #expect(events[0] == "src 2")
        #expect(events[1].hasPrefix("error eval 1 map:"))
    }

    @Test func mapReplaceSendsTheLiteral() throws {
        let h = try StageHarness().run(#"[{"op":"mapReplace","value":{"a":[1,true]}}]"#)
        try h.pub(["1", "2"])
        h.complete()
        #expect(h.values() == [#"{"a":[1,true]}"#, #"{"a":[1,true]}"#, "completed"])
    }

    @Test func reduceEachBindsItems() throws {
        let h = try StageHarness().run(#"[{"op":"reduceEach","expr":"$0 + $1 + ($2 == null ? 0 : 100)"}]"#)
        try h.pub(["[1,2]", "[1,2,3]", "5"])
        let values = h.values()
        #expect(values.prefix(2) == ["3", "103"])
        #expect(values.count == 3 && values[2].hasPrefix("error eval 0 reduceEach: reduceEach needs an array"))
    }

    @Test func scanBindsAccAndIndex() throws {
        let h = try StageHarness().run(#"[{"op":"scan","start":0,"expr":"$acc + . * 10 + $index"}]"#)
        try h.pub(["1", "2", "3"])
        h.complete()
        #expect(h.values() == ["10", "31", "63", "completed"])
    }

    @Test func scanErrorIsRaisedAtOnce() throws {
        let h = try StageHarness().run(#"[{"op":"scan","start":0,"expr":"$acc + ."}]"#)
        try h.pub(["1", "true"])
        let values = h.values()
        #expect(values.count == 2 && values[0] == "1" && values[1].hasPrefix("error eval 0 scan:"))
    }

    @Test func scanAccumulatorGrowingPastTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"scan","start":[],"expr":"$acc + [.]"}]"#)
        try h.pub(["1", "2", "3"])
        #expect(h.values() == ["[1]", "[1,2]", "error eval 0 limit"])
    }

    @Test func aggregateSendsTheLastAccumulatorOrStart() throws {
        let h = try StageHarness().run(#"[{"op":"aggregate","start":0,"expr":"$acc + ."}]"#)
        try h.pub(["1", "2", "3"])
        #expect(h.values() == [])
        h.complete()
        #expect(h.values() == ["6", "completed"])
        let empty = try StageHarness().run(#"[{"op":"aggregate","start":{"n":0},"expr":"$acc"}]"#)
        empty.complete()
        #expect(empty.values() == [#"{"n":0}"#, "completed"])
    }

    @Test func aggregateErrorEndsBeforeCompletion() throws {
        let h = try StageHarness().run(#"[{"op":"aggregate","start":0,"expr":"$acc + ."}]"#)
        try h.pub(["1", "\"x\""])
        let values = h.values()
        #expect(values.count == 1 && values[0].hasPrefix("error eval 0 aggregate:"))
    }

    @Test func collectKeepsExactBytes() throws {
        let h = try StageHarness().run(#"[{"op":"collect"}]"#)
        try h.pub(["1.0", #""\u00e9""#, #"{ "a" : 1 }"#])
        h.complete()
        #expect(h.values() == [#"[1.0,"\u00e9",{ "a" : 1 }]"#, "completed"])
        let empty = try StageHarness().run(#"[{"op":"collect"}]"#)
        empty.complete()
        #expect(empty.values() == ["[]", "completed"])
    }

    @Test func collectPastTheLimitEnds() throws {
        let h = try StageHarness(maxBufferValues: 2).run(#"[{"op":"collect"}]"#)
        try h.pub(["1", "2", "3"])
        #expect(h.values() == ["error eval 0 limit"])
    }

    @Test func combinePreviousBindsPrev() throws {
        let h = try StageHarness().run(#"[{"op":"combinePrevious","start":0,"expr":". - $prev"}]"#)
        try h.pub(["1", "4", "10"])
        #expect(h.values() == ["1", "3", "6"])
    }

    @Test func startWithSendsFirst() throws {
        let h = try StageHarness().run(#"[{"op":"startWith","value":"hi"}]"#)
        try h.pub("2")
        #expect(h.values() == [#""hi""#, "2"])
    }

    @Test func materializeAndDematerialize() throws {
        let h = try StageHarness().run(#"[{"op":"materialize"}]"#)
        try h.pub("1.50")
        h.fail("src", "bad")
        #expect(
            h.values() == [
                #"{"event":"next","value":1.50}"#, #"{"event":"error","code":"subject_error","message":"bad"}"#,
                "completed",
            ])
        let round = try StageHarness().run(#"[{"op":"materialize"},{"op":"dematerialize"}]"#)
        try round.pub("7")
        round.complete()
        #expect(round.values() == ["7", "completed"])
        let failed = try StageHarness().run(#"[{"op":"dematerialize"}]"#)
        try failed.pub(#"{"event":"error","code":"subject_error","message":"m"}"#)
        #expect(failed.values() == ["error subject_error - m"])
    }

    @Test func dematerializeOnANonEventIsEval() throws {
        let h = try StageHarness().run(#"[{"op":"dematerialize"}]"#)
        try h.pub("3")
        let values = h.values()
        #expect(values.count == 1 && values[0].hasPrefix("error eval 0 dematerialize:"))
    }

    @Test func notAndOr() throws {
        let not = try StageHarness().run(#"[{"op":"not"}]"#)
        try not.pub(["true", "false", "\"s\""])
        let notValues = not.values()
        #expect(notValues.prefix(2) == ["false", "true"])
        #expect(notValues.count == 3 && notValues[2].hasPrefix("error eval 0 not:"))
        let and = try StageHarness().run(#"[{"op":"and"}]"#)
        try and.pub(["[true,true]", "[true,false]", "[]", "[1]"])
        let andValues = and.values()
        #expect(andValues.prefix(3) == ["true", "false", "true"])
        #expect(andValues.count == 4 && andValues[3].hasPrefix("error eval 0 and:"))
        let or = try StageHarness().run(#"[{"op":"or"}]"#)
        try or.pub(["[false,true]", "[false]", "{}"])
        let orValues = or.values()
        #expect(orValues.prefix(2) == ["true", "false"])
        #expect(orValues.count == 3 && orValues[2].hasPrefix("error eval 0 or:"))
    }

    @Test func anyAndAll() throws {
        let any = try StageHarness().run(#"[{"op":"any","expr":". > 2"}]"#)
        try any.pub(["1", "3", "5"])
        #expect(any.values() == ["true", "completed"])
        let anyEmpty = try StageHarness().run(#"[{"op":"any"}]"#)
        anyEmpty.complete()
        #expect(anyEmpty.values() == ["false", "completed"])
        let anyAtAll = try StageHarness().run(#"[{"op":"any"}]"#)
        try anyAtAll.pub("null")
        #expect(anyAtAll.values() == ["true", "completed"])
        let all = try StageHarness().run(#"[{"op":"all","expr":". > 2"}]"#)
        try all.pub(["3", "1"])
        #expect(all.values() == ["false", "completed"])
        let allEmpty = try StageHarness().run(#"[{"op":"all","expr":". > 2"}]"#)
        allEmpty.complete()
        #expect(allEmpty.values() == ["true", "completed"])
    }
}
