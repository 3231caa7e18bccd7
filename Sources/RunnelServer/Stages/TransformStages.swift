import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol

/// `map`, `mapReplace`, `reduceEach`, `scan`, `aggregate`, `collect`, `combinePrevious`,
/// `startWith`: each on the library operator of the same name.
extension StageCompiler {
    func map(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let expression = StageExpression(try stage.expression(), stage)
        return signal.tryMap { message in try expression.mapped(message) }
    }

    /// Every value replaced by the literal, encoded once and shared; each keeps its subject.
    func mapReplace(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["value"])
        let replacement = Payload(raw: RawJSON(encoding: try stage.value("value")))
        return signal.map { message in Message(madeFrom: message, constant: replacement) }
    }

    /// The library's `reduceEach` takes tuples of fixed arity; a JSON array has any length, so
    /// this is `map` with the array's items bound to `$0`...`$9` (missing ones are null).
    func reduceEach(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let expression = StageExpression(try stage.expression(variables: ["items"]), stage)
        return signal.tryMap { message in
            let value = try expression.decoded(message)
            guard case .array(let items) = value else {
                throw StageFailure.eval(
                    "reduceEach needs an array, got \(value.typeName)", stage: expression.stage, name: expression.name)
            }
            let bindings = ExpressionBindings(items: items, subject: message.label.name, key: message.label.key)
            return Message(madeFrom: message, computed: try expression.evaluateOutput(value, bindings))
        }
    }

    /// Running accumulators; `$acc` and `$index` are bound. The library's reduce cannot throw,
    /// so the accumulator carries a `Result` that the next `tryMap` rethrows at once.
    func scan(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["start", "expr"])
        return try accumulated(stage, signal)
    }

    /// The last accumulator, at completion (`start` when there were no values): the library's
    /// `aggregate` over the running accumulators, so an evaluation error still ends the
    /// subscription when it happens rather than at completion.
    func aggregate(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["start", "expr"])
        let start = Message(label: defaultLabel, computed: try stage.value("start"))
        return try accumulated(stage, signal).aggregate(start: start) { _, latest in latest }
    }

    private func accumulated(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError)
        -> Signal<Message>
    {
        let start = try stage.value("start")
        let expression = StageExpression(try stage.expression(variables: ["acc", "index"]), stage)
        let maxValues = limits.maxBufferValues
        let label = defaultLabel
        return signal.scan(start: Accumulation(result: .success(start), label: label, seq: nil)) {
            running, message, index in
            guard case .success(let acc) = running.result else { return running }
            do throws(ProtocolError) {
                let value = try expression.decoded(message)
                let bindings = ExpressionBindings(
                    acc: acc, index: index, subject: message.label.name, key: message.label.key)
                let next = try expression.evaluateOutput(value, bindings)
                if next.itemCount > maxValues { throw StageFailure.limit(stage: expression.stage) }
                return Accumulation(
                    result: .success(next), label: message.label, seq: message.seq, time: message.time)
            } catch {
                return Accumulation(
                    result: .failure(error), label: message.label, seq: message.seq, time: message.time)
            }
        }
        .tryMap { accumulation in
            Message(
                label: accumulation.label, computed: try accumulation.result.get(), seq: accumulation.seq,
                time: accumulation.time)
        }
    }

    /// All values as one array at completion, their bytes unchanged; more than
    /// `max_buffer_values` values end the subscription with "limit".
    func collect(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let label = defaultLabel
        return countingHeld(by: stage, signal) { counted, _ in
            counted.collect().map { messages in
                let value = RawArray.of(messages.map(\.value))
                value.publishedAt = messages.last?.time ?? 0
                return Message(label: messages.last?.label ?? label, value: value, seq: messages.last?.seq)
            }
        }
    }

    /// `expr` on each value with the previous one bound to `$prev` (`start` for the first).
    func combinePrevious(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["start", "expr"])
        let start = Message(label: defaultLabel, computed: try stage.value("start"))
        let expression = StageExpression(try stage.expression(variables: ["prev"]), stage)
        return signal.combinePrevious(start: start) { previous, current -> Result<Message, ProtocolError> in
            do throws(ProtocolError) {
                let bindings = ExpressionBindings(
                    prev: try expression.decoded(previous), subject: current.label.name, key: current.label.key)
                let value = try expression.evaluateOutput(try expression.decoded(current), bindings)
                return .success(Message(madeFrom: current, computed: value))
            } catch {
                return .failure(error)
            }
        }
        .tryMap { try $0.get() }
    }

    func startWith(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["value"])
        return signal.startWith(Message(label: defaultLabel, computed: try stage.value("value")))
    }
}

/// `scan`'s running state: the accumulator or the error that stopped it, and the subject of
/// the value it last took in.
struct Accumulation: Sendable {
    let result: Result<JSONValue, ProtocolError>
    let label: SubjectLabel
    /// The seq of the value it last took in, which the result is the newest of.
    let seq: UInt64?
    /// That value's time (`Message.time`).
    var time: Int64 = 0
}

extension JSONValue {
    /// How many items an array or members an object holds; 1 for a scalar.
    var itemCount: Int {
        switch self {
        case .array(let items): return items.count
        case .object(let object): return object.members.count
        default: return 1
        }
    }
}
