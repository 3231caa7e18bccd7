import Runnel
import RunnelProtocol

/// `filter`, `ignore`, `ignoreValues`, `distinctUntilChanged`, `take`, `skip`, `takeLast`,
/// `takeWhile`, `skipWhile`, `takeUntilBlock`, `skipUntilBlock`. Values pass unchanged (their
/// exact bytes); only the stages with `expr`, `ignore` and `distinctUntilChanged` decode.
extension StageCompiler {
    func filter(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let expression = StageExpression(try stage.expression(), stage)
        return signal.tryFilter { try expression.test($0) }
    }

    /// Drops values structurally equal to the literal (`1.0` equals `1`).
    func ignore(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["value"])
        return signal.ignore(Message(label: defaultLabel, computed: try stage.value("value")))
    }

    func ignoreValues(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        return signal.ignoreValues()
    }

    /// Compares values structurally; identical bytes are equal without decoding.
    func distinctUntilChanged(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError)
        -> Signal<Message>
    {
        try stage.checkNoOtherArguments([])
        return signal.distinctUntilChanged()
    }

    func take(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["count"])
        return signal.take(try stage.count())
    }

    func skip(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["count"])
        return signal.skip(try stage.count())
    }

    /// The last `count` values, sent one by one at completion (as ReactiveCocoa's `takeLast:`
    /// and the library's). The library keeps at most `count`; a `count` over
    /// `max_buffer_values` ends the subscription with "limit" once more values than that
    /// have arrived.
    func takeLast(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["count"])
        let count = try stage.count()
        guard count > limits.maxBufferValues else { return signal.takeLast(count) }
        return countingHeld(by: stage, signal) { counted, _ in counted.takeLast(count) }
    }

    func takeWhile(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        return signal.tested(by: StageExpression(try stage.expression(), stage)).take(while: \.passed).messages
    }

    func skipWhile(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        return signal.tested(by: StageExpression(try stage.expression(), stage)).skip(while: \.passed).messages
    }

    func takeUntilBlock(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        return signal.tested(by: StageExpression(try stage.expression(), stage)).take(until: \.passed).messages
    }

    func skipUntilBlock(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        return signal.tested(by: StageExpression(try stage.expression(), stage)).skip(until: \.passed).messages
    }
}
