import Runnel
import RunnelProtocol

/// `throttle`, `delay`, `bufferWithTime`, `timeout`, `sample`: the library's time operators on
/// the compiler's scheduler (the server's loop). Their timers are cancelled when the
/// subscription ends, however it ends.
extension StageCompiler {
    /// With `expr`, only values passing it are throttled; the others pass at once.
    func throttle(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["seconds", "expr"])
        let interval = try stage.seconds()
        guard let compiled = try stage.optionalExpression() else {
            return signal.throttle(interval, on: scheduler)
        }
        return signal.tested(by: StageExpression(compiled, stage))
            .throttle(interval, on: scheduler, valuesPassing: \.passed)
            .messages
    }

    /// Values waiting out their delay are held (each with its timer): more than
    /// `max_buffer_values` at once ends the subscription with "limit", counted before the
    /// library's delay and given back as each value is sent on.
    func delay(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["seconds"])
        let interval = try stage.seconds()
        let scheduler = self.scheduler
        return countingHeld(by: stage, signal) { counted, held in
            counted.delay(interval, on: scheduler).doNext { _ in held.count -= 1 }
        }
    }

    /// Arrays of the values of each window, their bytes unchanged. A window holding more than
    /// `max_buffer_values` values ends the subscription with "limit": a count taken before the
    /// library's buffer and given back as each window is sent.
    func bufferWithTime(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["seconds"])
        let interval = try stage.seconds()
        let scheduler = self.scheduler
        return countingHeld(by: stage, signal) { counted, held in
            counted.buffer(withTime: interval, on: scheduler).map { messages in
                held.count -= messages.count
                return Message(madeFrom: messages[messages.count - 1], value: RawArray.of(messages.map(\.value)))
            }
        }
    }

    /// The library's `RunnelError.timedOut` becomes `eval` / "timeout" naming this stage.
    func timeout(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["seconds"])
        let index = stage.index
        return signal.timeout(try stage.seconds(), on: scheduler).catch { error in
            if case RunnelError.timedOut = error { return .error(ProtocolError(.eval, "timeout", stage: index)) }
            return .error(error)
        }
    }

    /// `seconds` samples on an interval; `subject` samples at each of that subject's values.
    func sample(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["seconds", "subject"])
        switch (stage.has("seconds"), stage.has("subject")) {
        case (true, false):
            return signal.sample(Signal.interval(try stage.seconds(), on: scheduler))
        case (false, true):
            return signal.sample(try subjectSignal(try stage.subject(), for: stage))
        default:
            throw stage.failure("needs exactly one of 'seconds' and 'subject'")
        }
    }
}
