import Runnel
import RunnelJSON
import RunnelProtocol

/// Finds another subject's signal by name, for the stages that name subjects
/// (`combineLatestWith`, `merge`, `flattenMap`...). The server's lookup creates the subject
/// when `auto_create` allows, else fails with `unknown_subject` (or `limit`). `late` is nil
/// while a chain compiles: the lookup answers at once. At run time (a subject a value names)
/// a lookup that can only learn later whether the subject can be had (on a loop that does not
/// own it, decision 0011) returns a signal that then fails with `late(error)`.
public typealias SubjectLookup =
    @Sendable (_ name: String, _ late: (@Sendable (ProtocolError) -> ProtocolError)?) throws(ProtocolError) ->
    Signal<Message>

/// Compiles a `sub`'s stage list (docs/protocol.md, "Stages") into one signal built from the
/// `Runnel` library's operators, checking the whole list before anything is subscribed.
///
/// Compile-time failures carry the stage's index: `bad_operator` (not an object, unknown name,
/// missing or wrongly typed argument), `bad_expr` (an expression that does not compile), or a
/// lookup's own code for a named subject; more than `max_stages` stages is `limit`. Run-time
/// failures end only their subscription with `eval` naming the stage; the library disposes
/// the chain's timers and inner subscriptions when it terminates.
///
/// Time stages run on `scheduler`: the server's loop scheduler, or a `TestScheduler` in tests.
/// A compiled signal is meant to be subscribed once, on the loop thread; the state its stages
/// keep per subscription is created at subscription (`Signal.deferred`), without locks.
public struct StageCompiler: Sendable {
    public let scheduler: any Scheduler
    public let limits: StageLimits
    /// The label of values that come from no single message (`aggregate`'s start, `collect`'s
    /// `[]`, `any`): the subscription's subject or pattern.
    public let defaultLabel: SubjectLabel
    let lookup: SubjectLookup
    /// What the chain's expression evaluations are charged to, and refused by: the
    /// subscribing connection's (see `EvaluationAccount`); nil charges no one.
    let account: EvaluationAccount?
    /// Where the chain's expressions are compiled, one shared object per identical expression
    /// (the server's; its clock replaces `limits.clock`); nil compiles each on its own.
    let interner: ExpressionInterner?

    public init(
        scheduler: any Scheduler, limits: StageLimits, defaultLabel: SubjectLabel,
        lookup: @escaping SubjectLookup
    ) {
        self.init(
            scheduler: scheduler, limits: limits, defaultLabel: defaultLabel, account: nil, interner: nil,
            lookup: lookup)
    }

    init(
        scheduler: any Scheduler, limits: StageLimits, defaultLabel: SubjectLabel, account: EvaluationAccount?,
        interner: ExpressionInterner?, lookup: @escaping SubjectLookup
    ) {
        self.scheduler = scheduler
        self.limits = limits
        self.defaultLabel = defaultLabel
        self.account = account
        self.interner = interner
        self.lookup = lookup
    }

    /// `source` through `stages`, in order.
    public func compile(_ stages: [JSONValue], source: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        guard stages.count <= limits.maxStages else {
            throw ProtocolError(.limit, "\(stages.count) stages, over max_stages (\(limits.maxStages))")
        }
        var signal = source
        for (index, stage) in stages.enumerated() {
            signal = try apply(
                StageArguments(stage, index: index, limits: limits, account: account, interner: interner), to: signal)
        }
        return signal
    }

    private func apply(_ stage: StageArguments, to signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        switch stage.name {
        // transform
        case "map": return try map(stage, signal)
        case "mapReplace": return try mapReplace(stage, signal)
        case "reduceEach": return try reduceEach(stage, signal)
        case "scan": return try scan(stage, signal)
        case "aggregate": return try aggregate(stage, signal)
        case "collect": return try collect(stage, signal)
        case "combinePrevious": return try combinePrevious(stage, signal)
        case "startWith": return try startWith(stage, signal)
        case "materialize": return try materialize(stage, signal)
        case "dematerialize": return try dematerialize(stage, signal)
        case "not": return try not(stage, signal)
        case "and": return try and(stage, signal)
        case "or": return try or(stage, signal)
        case "any": return try any(stage, signal)
        case "all": return try all(stage, signal)
        // filter
        case "filter": return try filter(stage, signal)
        case "ignore": return try ignore(stage, signal)
        case "ignoreValues": return try ignoreValues(stage, signal)
        case "distinctUntilChanged": return try distinctUntilChanged(stage, signal)
        case "take": return try take(stage, signal)
        case "skip": return try skip(stage, signal)
        case "takeLast": return try takeLast(stage, signal)
        case "takeWhile": return try takeWhile(stage, signal)
        case "skipWhile": return try skipWhile(stage, signal)
        case "takeUntilBlock": return try takeUntilBlock(stage, signal)
        case "skipUntilBlock": return try skipUntilBlock(stage, signal)
        // time
        case "throttle": return try throttle(stage, signal)
        case "delay": return try delay(stage, signal)
        case "bufferWithTime": return try bufferWithTime(stage, signal)
        case "timeout": return try timeout(stage, signal)
        case "sample": return try sample(stage, signal)
        // combine
        case "combineLatestWith": return try combineLatestWith(stage, signal)
        case "zipWith": return try zipWith(stage, signal)
        case "merge": return try merge(stage, signal)
        case "concat": return try concat(stage, signal)
        case "takeUntil": return try takeUntil(stage, signal)
        default:
            // higher-order
            if let kind = RunTimeLookupStage(rawValue: stage.name) { return try apply(kind, stage, to: signal) }
            throw ProtocolError(.badOperator, "unknown stage '\(stage.name)'", stage: stage.index)
        }
    }

    /// Another subject's signal for a stage being compiled: the lookup's error, with the stage.
    func subjectSignal(_ name: String, for stage: StageArguments) throws(ProtocolError) -> Signal<Message> {
        do {
            return try lookup(name, nil)
        } catch {
            var failure = error
            failure.stage = stage.index
            throw failure
        }
    }
}
