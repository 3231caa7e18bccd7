import Runnel
import RunnelProtocol
import Testing

@testable import RunnelServer

@Suite struct StageValidationTests {
    @Test(arguments: [
        (#"[{"op":"frobnicate"}]"#, 0),
        (#"[{"op":"take","count":1},{"op":"frobnicate"}]"#, 1),
        (#"[3]"#, 0),
        (#"[{"op":"take","count":1},{"count":1}]"#, 1),
        (#"[{"op":"take"}]"#, 0),
        (#"[{"op":"take","count":-1}]"#, 0),
        (#"[{"op":"take","count":1.5}]"#, 0),
        (#"[{"op":"take","count":"1"}]"#, 0),
        (#"[{"op":"map"}]"#, 0),
        (#"[{"op":"map","expr":3}]"#, 0),
        (#"[{"op":"map","expr":".","extra":1}]"#, 0),
        (#"[{"op":"scan","expr":"$acc"}]"#, 0),
        (#"[{"op":"throttle","seconds":0}]"#, 0),
        (#"[{"op":"delay","seconds":0.0001}]"#, 0),
        (#"[{"op":"timeout","seconds":86401}]"#, 0),
        (#"[{"op":"bufferWithTime","seconds":"1"}]"#, 0),
        (#"[{"op":"sample"}]"#, 0),
        (#"[{"op":"sample","seconds":1,"subject":"a"}]"#, 0),
        (#"[{"op":"merge","subjects":[]}]"#, 0),
        (#"[{"op":"merge","subjects":["a",1]}]"#, 0),
        (#"[{"op":"zipWith","subject":"a b"}]"#, 0),
        (#"[{"op":"concat","subject":"a.*"}]"#, 0),
    ])
    func badOperatorNamesTheStage(ops: String, stage: Int) {
        let error = compileError(ops)
        #expect(error?.code == .badOperator, "\(ops): \(String(describing: error))")
        #expect(error?.stage == stage)
    }

    @Test func badArgumentMessagesNameTheArgument() {
        #expect(
            compileError(#"[{"op":"take","count":-1}]"#)?.message
                == "stage 'take': argument 'count' must be an integer >= 0")
        #expect(compileError(#"[{"op":"map","expr":".","x":1}]"#)?.message == "stage 'map': unknown argument 'x'")
        #expect(compileError(#"[{"op":"scan","expr":"$acc"}]"#)?.message == "stage 'scan': missing argument 'start'")
    }

    @Test func expressionThatDoesNotCompileIsBadExpr() {
        let error = compileError(#"[{"op":"take","count":1},{"op":"filter","expr":". >"}]"#)
        #expect(error?.code == .badExpr)
        #expect(error?.stage == 1)
        #expect(error?.message.hasPrefix("stage 'filter': ") == true)
        #expect(error?.message.contains("(at byte 3)") == true)
        // A variable the stage does not bind.
        #expect(compileError(#"[{"op":"map","expr":"$acc"}]"#)?.code == .badExpr)
        #expect(compileError(#"[{"op":"scan","start":0,"expr":"$prev"}]"#)?.code == .badExpr)
    }

    @Test func tooManyStagesIsLimit() {
        let ops = "[" + Array(repeating: #"{"op":"ignoreValues"}"#, count: 3).joined(separator: ",") + "]"
        #expect(compileError(ops, maxStages: 2) == ProtocolError(.limit, "3 stages, over max_stages (2)"))
        #expect(compileError(ops, maxStages: 3) == nil)
    }

    @Test func subjectLookupFailureCarriesTheStage() {
        let error = compileError(#"[{"op":"take","count":1},{"op":"combineLatestWith","subject":"missing"}]"#)
        #expect(error == ProtocolError(.unknownSubject, "no subject 'missing'", stage: 1))
    }

    @Test func nothingIsSubscribedWhenALaterStageIsBad() {
        let h = StageHarness()
        #expect(throws: ProtocolError.self) {
            _ = try h.compile(#"[{"op":"combineLatestWith","subject":"b"},{"op":"nope"}]"#)
        }
        #expect(h.subject("b").subscriberCount == 0)
        #expect(h.source.subscriberCount == 0)
    }

    @Test func noStagesIsTheSourceItself() throws {
        let h = StageHarness()
        #expect(try h.compile("[]") === h.source)
    }
}
