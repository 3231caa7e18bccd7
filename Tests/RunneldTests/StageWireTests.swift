import RunnelTestSupport
import Testing

/// Every stage of the protocol's table through a real `runneld`, checking the exact lines on the
/// wire and the terminal event; the stages and behaviours `StageIntegrationTests` already pins
/// down are not repeated. Each test is a script for `expectChain`: subscribe subject `s` with the
/// stages, publish from a second connection, read the expected lines with deadlines, and check
/// that the next line is the reply to `stats` showing the chain (and its timers) gone.
@Suite struct StageWireTests {
    // MARK: transform

    @Test func mapReplace() throws {
        try expectChain(
            #"[{"op":"mapReplace","value":{"k":[1,"x"]}}]"#, publish: ["1", #""a""#],
            events: [#"{"k":[1,"x"]}"#, #"{"k":[1,"x"]}"#, .completed])
    }

    @Test func reduceEach() throws {
        try expectChain(
            #"[{"op":"reduceEach","expr":"$0 + $1"}]"#, publish: ["[1,2]", #"["a","b","c"]"#],
            events: ["3", #""ab""#, .completed])
    }

    @Test func aggregateSendsTheLastAccumulatorAtCompletion() throws {
        try expectChain(
            #"[{"op":"aggregate","start":0,"expr":"$acc + . * $index"}]"#, publish: ["5", "2", "3"],
            events: ["8", .completed])
    }

    @Test func aggregateWithNoValuesSendsStart() throws {
        try expectChain(
            #"[{"op":"aggregate","start":{"n":0},"expr":"$acc"}]"#, publish: [],
            events: [#"{"n":0}"#, .completed])
    }

    @Test func collectWithNoValuesSendsAnEmptyArray() throws {
        try expectChain(#"[{"op":"collect"}]"#, publish: [], events: ["[]", .completed])
    }

    @Test func combinePrevious() throws {
        try expectChain(
            #"[{"op":"combinePrevious","start":0,"expr":". - $prev"}]"#, publish: ["1", "4", "9"],
            events: ["1", "3", "5", .completed])
    }

    @Test func startWith() throws {
        try expectChain(
            #"[{"op":"startWith","value":"first"}]"#, publish: ["1"],
            events: [#""first""#, "1", .completed])
    }

    @Test func materializeTurnsTheSubjectErrorIntoValues() throws {
        try expectChain(
            #"[{"op":"materialize"}]"#, steps: [.pub("s", "1"), .error("s", "boom")],
            events: [
                #"{"event":"next","value":1}"#, #"{"event":"error","code":"subject_error","message":"boom"}"#,
                .completed,
            ])
    }

    @Test func dematerializeCompletes() throws {
        try expectChain(
            #"[{"op":"dematerialize"}]"#,
            publish: [#"{"event":"next","value":[1]}"#, #"{"event":"completed"}"#, #"{"event":"next","value":2}"#],
            complete: false, events: ["[1]", .completed])
    }

    @Test func dematerializeErrs() throws {
        try expectChain(
            #"[{"op":"dematerialize"}]"#,
            publish: [#"{"event":"error","code":"limit","message":"full"}"#, "1"], complete: false,
            events: [.error(code: "limit", message: "full")])
    }

    @Test func not() throws {
        try expectChain(
            #"[{"op":"not"}]"#, publish: ["true", "false", #""yes""#], complete: false,
            events: ["false", "true", .error(code: "eval", message: "not: not needs a boolean", stage: 0)])
    }

    @Test func and() throws {
        try expectChain(
            #"[{"op":"and"}]"#, publish: ["[true,true]", "[true,false]", "[]"],
            events: ["true", "false", "true", .completed])
    }

    @Test func or() throws {
        try expectChain(
            #"[{"op":"or"}]"#, publish: ["[false,true]", "[false]", "[]"],
            events: ["true", "false", "false", .completed])
    }

    @Test func anyWithoutExprIsTrueAtTheFirstValue() throws {
        try expectChain(#"[{"op":"any"}]"#, publish: ["null", "2"], complete: false, events: ["true", .completed])
    }

    @Test func anyWithoutValuesIsFalse() throws {
        try expectChain(#"[{"op":"any"}]"#, publish: [], events: ["false", .completed])
    }

    @Test func anyWithExprWaitsForAPassingValue() throws {
        try expectChain(
            #"[{"op":"any","expr":". > 2"}]"#, publish: ["1", "3", "4"], complete: false,
            events: ["true", .completed])
    }

    @Test func anyWithExprIsFalseWhenNonePasses() throws {
        try expectChain(#"[{"op":"any","expr":". > 2"}]"#, publish: ["1", "2"], events: ["false", .completed])
    }

    @Test func allIsFalseAtTheFirstFailingValue() throws {
        try expectChain(
            #"[{"op":"all","expr":". > 0"}]"#, publish: ["1", "2", "-1", "3"], complete: false,
            events: ["false", .completed])
    }

    @Test func allWithoutValuesIsTrue() throws {
        try expectChain(#"[{"op":"all","expr":". > 0"}]"#, publish: [], events: ["true", .completed])
    }

    // MARK: filter

    @Test func ignoreComparesStructurally() throws {
        try expectChain(
            #"[{"op":"ignore","value":{"a":1,"b":[true]}}]"#,
            publish: [#"{"b":[true],"a":1.0}"#, #"{"a":1}"#, "1"], events: [#"{"a":1}"#, "1", .completed])
    }

    @Test func ignoreValuesPassesOnlyTheTerminalEvent() throws {
        try expectChain(
            #"[{"op":"ignoreValues"}]"#, steps: [.pub("s", "1"), .pub("s", "2"), .error("s", "boom")],
            events: [.error(code: "subject_error", message: "boom")])
    }

    @Test func distinctUntilChanged() throws {
        try expectChain(
            #"[{"op":"distinctUntilChanged"}]"#, publish: ["1", "1", "1.0", #"{"a":2}"#, #"{"a":2}"#, "1"],
            events: ["1", #"{"a":2}"#, "1", .completed])
    }

    @Test func takeZeroCompletesAtOnce() throws {
        try expectChain(#"[{"op":"take","count":0}]"#, publish: ["1"], complete: false, events: [.completed])
    }

    @Test func takeLastSendsItsValuesOneByOne() throws {
        try expectChain(
            #"[{"op":"takeLast","count":2}]"#, publish: ["1", #""two""#, "3.0"],
            events: [#""two""#, "3.0", .completed])
    }

    @Test func takeWhile() throws {
        try expectChain(
            #"[{"op":"takeWhile","expr":". < 3"}]"#, publish: ["1", "2", "3", "1"], complete: false,
            events: ["1", "2", .completed])
    }

    @Test func skipWhile() throws {
        try expectChain(
            #"[{"op":"skipWhile","expr":". < 3"}]"#, publish: ["1", "2", "3", "1"],
            events: ["3", "1", .completed])
    }

    @Test func takeUntilBlock() throws {
        try expectChain(
            #"[{"op":"takeUntilBlock","expr":". == 3"}]"#, publish: ["1", "2", "3", "1"],
            complete: false, events: ["1", "2", .completed])
    }

    @Test func skipUntilBlock() throws {
        try expectChain(
            #"[{"op":"skipUntilBlock","expr":". == 3"}]"#, publish: ["1", "3", "1"],
            events: ["3", "1", .completed])
    }

    // MARK: time

    @Test func throttleSendsTheHeldValueBeforeCompleting() throws {
        try expectChain(#"[{"op":"throttle","seconds":0.2}]"#, publish: ["1", "2"], events: ["2", .completed])
    }

    @Test func throttleWithExprPassesFailingValuesAndDropsTheHeldOne() throws {
        // 1 is held and sent when its 0.05 s pass; "x" fails the test and passes at once; 2 is
        // held and dropped by "y".
        try expectChain(
            #"[{"op":"throttle","seconds":0.05,"expr":"type(.) == \"number\""}]"#,
            steps: [.pub("s", "1"), .read(1), .pub("s", #""x""#), .pub("s", "2"), .pub("s", #""y""#), .complete("s")],
            events: ["1", #""x""#, #""y""#, .completed])
    }

    @Test func delayDelaysCompletion() throws {
        try expectChain(#"[{"op":"delay","seconds":0.05}]"#, publish: ["1", "2"], events: ["1", "2", .completed])
    }

    @Test func delayDoesNotDelayErrors() throws {
        try expectChain(
            #"[{"op":"delay","seconds":0.2}]"#, steps: [.pub("s", "1"), .error("s", "boom")],
            events: [.error(code: "subject_error", message: "boom")])
    }

    @Test func bufferWithTimeFlushesAtCompletion() throws {
        // The first window closes on its own; the second is flushed by completion.
        try expectChain(
            #"[{"op":"bufferWithTime","seconds":0.05}]"#,
            steps: [.pub("s", "1"), .pub("s", #""a""#), .read(1), .pub("s", "2.50"), .complete("s")],
            events: [#"[1,"a"]"#, "[2.50]", .completed])
    }

    @Test func sampleOnAnIntervalRepeatsTheLatestValue() throws {
        // Ticks before the first value send nothing; later ticks resend it unchanged.
        try expectChain(
            #"[{"op":"sample","seconds":0.05},{"op":"take","count":2}]"#,
            steps: [.pause(.milliseconds(120)), .pub("s", #"{"v":1}"#)], events: [#"{"v":1}"#, #"{"v":1}"#, .completed])
    }

    @Test func sampleOnASubject() throws {
        try expectChain(
            #"[{"op":"sample","subject":"o"}]"#,
            steps: [
                .pub("o", "0"), .pub("s", "1"), .pub("s", "2"), .pub("o", "0"), .pub("o", "0"), .pub("s", "3"),
                .pub("o", "0"), .complete("o"),
            ], events: ["2", "2", "3", .completed])
    }

    // MARK: combine

    @Test func combineLatestWithCompletesWhenBothHave() throws {
        try expectChain(
            #"[{"op":"combineLatestWith","subject":"o"}]"#,
            steps: [
                .pub("s", "1"), .pub("o", #""x""#), .complete("s"), .pub("o", #""y""#), .complete("o"),
            ], events: [#"[1,"x"]"#, #"[1,"y"]"#, .completed])
    }

    @Test func zipWithCompletesWhenACompletedSideIsEmpty() throws {
        try expectChain(
            #"[{"op":"zipWith","subject":"o"}]"#,
            steps: [
                .pub("s", "1"), .pub("s", "2"), .pub("o", #""a""#), .complete("s"), .pub("o", #""b""#),
                .pub("o", #""c""#),
            ], events: [#"[1,"a"]"#, #"[2,"b"]"#, .completed])
    }

    @Test func mergeCompletesWhenAllHave() throws {
        try expectChain(
            #"[{"op":"merge","subjects":["o","p"]}]"#,
            steps: [
                .pub("s", "1"), .pub("o", "2"), .pub("p", "3"), .complete("s"), .complete("o"), .pub("p", "4"),
                .complete("p"),
            ], events: ["1", "2", "3", "4", .completed])
    }

    @Test func concatContinuesWithTheOtherSubject() throws {
        try expectChain(
            #"[{"op":"concat","subject":"o"}]"#,
            steps: [.pub("o", "0"), .pub("s", "1"), .complete("s"), .pub("o", "2"), .complete("o")],
            events: ["1", "2", .completed])
    }

    @Test func takeUntilIgnoresTheOtherSubjectsError() throws {
        try expectChain(
            #"[{"op":"takeUntil","subject":"o"}]"#,
            steps: [.pub("s", "1"), .error("o", "boom"), .pub("s", "2"), .complete("s")],
            events: ["1", "2", .completed])
    }

    @Test func takeUntilCompletesWhenTheOtherSubjectCompletes() throws {
        try expectChain(
            #"[{"op":"takeUntil","subject":"o"}]"#,
            steps: [.pub("s", "1"), .complete("o"), .pub("s", "2")], events: ["1", .completed])
    }

    // MARK: higher-order

    @Test func flattenMapCompletesWhenOuterAndInnersHave() throws {
        try expectChain(
            #"[{"op":"flattenMap","expr":"."}]"#,
            steps: [.pub("s", #""o""#), .pub("o", "1"), .complete("s"), .pub("o", "2"), .complete("o")],
            events: ["1", "2", .completed])
    }

    @Test func switchToLatestWithoutExprFollowsTheNamedSubject() throws {
        try expectChain(
            #"[{"op":"switchToLatest"}]"#,
            steps: [
                .pub("s", #""o""#), .pub("o", "1"), .pub("s", #""p""#), .pub("o", "2"), .pub("p", "3"),
                .complete("s"), .complete("p"),
            ], events: ["1", "3", .completed])
    }
}

/// One line the subscription `s` is expected to write; a string literal is a `next` value's
/// exact JSON text.
enum WireEvent: ExpressibleByStringLiteral, CustomStringConvertible {
    case next(String)
    case completed
    case error(code: String, message: String, stage: Int? = nil)

    init(stringLiteral value: String) { self = .next(value) }

    /// The exact line, in the server's field order.
    var description: String {
        switch self {
        case .next(let value): return #"{"ev":"next","sid":"s","value":\#(value)}"#
        case .completed: return #"{"ev":"completed","sid":"s"}"#
        case .error(let code, let message, let stage):
            let stageText = stage.map { #","stage":\#($0)"# } ?? ""
            return #"{"ev":"error","sid":"s","code":"\#(code)","message":"\#(message)"\#(stageText)}"#
        }
    }
}

/// One step of a chain script: requests from the publishing connection, or a wait.
enum ChainStep {
    /// Publishes `value` (exact JSON text) to `subject` without a ref.
    case pub(String, String)
    case complete(String)
    case error(String, String)
    /// Reads the next `n` expected lines before going on (deadline-based).
    case read(Int)
    /// Lets a time stage's clock run; only where nothing on the wire marks the moment.
    case pause(Duration)
}

/// Publishes `publish` to `s`, then completes it unless told not to.
func expectChain(
    _ ops: String, publish: [String], complete: Bool = true, events: [WireEvent],
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let steps = publish.map { ChainStep.pub("s", $0) } + (complete ? [.complete("s")] : [])
    try expectChain(ops, steps: steps, events: events, sourceLocation: sourceLocation)
}

/// Subscribes `s` (sid `s`) with the stage list `ops` (exact JSON text) on a fresh server, runs
/// `steps` from a second connection, and expects exactly `events`, in order, as the
/// subscription's lines. The last event must be terminal: the next line must then be the reply
/// to `stats`, with no subscription and no timer left.
func expectChain(
    _ ops: String, steps: [ChainStep], events: [WireEvent], sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let server = try RunneldProcess()
    let client = try server.connect()
    let reply = try client.request(#"{"op":"sub","subject":"s","sid":"s","ops":\#(ops),"ref":"sub"}"#)
    try #require(reply == ["ok": true, "ref": "sub", "sid": "s"], "\(reply)", sourceLocation: sourceLocation)
    let publisher = try server.connect()
    var expected = events[...]
    func read(_ count: Int) {
        for _ in 0..<count {
            guard let event = expected.popFirst() else { return }
            let line = client.readLine()
            #expect(line == event.description, sourceLocation: sourceLocation)
        }
    }
    for step in steps {
        switch step {
        case .pub(let subject, let value):
            try publisher.send(#"{"op":"pub","subject":"\#(subject)","value":\#(value)}"#)
        case .complete(let subject):
            try publisher.expectOK(["op": "complete", "subject": .string(subject)], sourceLocation: sourceLocation)
        case .error(let subject, let message):
            try publisher.expectOK(
                ["op": "error", "subject": .string(subject), "message": .string(message)],
                sourceLocation: sourceLocation)
        case .read(let count):
            read(count)
        case .pause(let duration):
            pollPause(duration)
        }
    }
    // A `pub` without a ref answers only on failure: the publisher's next line is the ping's.
    try publisher.barrier(sourceLocation: sourceLocation)
    read(expected.count)
    let stats = try client.stats(sourceLocation: sourceLocation)
    #expect(stats["subscriptions"] == 0 && stats["timers"] == .idleTimers, "\(stats)", sourceLocation: sourceLocation)
}
