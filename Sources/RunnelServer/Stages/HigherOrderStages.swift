import Runnel
import RunnelJSON
import RunnelProtocol

/// The stages whose values name the subjects they read: the compiler's names for them, and
/// what tells a `sub` that its chain looks subjects up as values arrive (a loop reading
/// replicas then has every subject there first: `Session.everySubjectIsHere`).
enum RunTimeLookupStage: String {
    case flattenMap, switchToLatest
}

/// `flattenMap` and `switchToLatest`: each value (or `expr` on it) names a subject, looked up
/// when the value arrives; the library merges those subjects or follows the latest.
extension StageCompiler {
    /// Whether `stages` (a `sub`'s list, checked or not) has a stage that looks subjects up as
    /// values arrive, not as the chain is compiled.
    static func looksUpAtRunTime(_ stages: [JSONValue]) -> Bool {
        stages.contains { stage in
            guard case .object(let members) = stage, case .string(let name)? = members["op"] else { return false }
            return RunTimeLookupStage(rawValue: name) != nil
        }
    }

    /// `stage`, of the kind `kind`, on `signal` (`StageCompiler.compile`).
    func apply(_ kind: RunTimeLookupStage, _ stage: StageArguments, to signal: Signal<Message>) throws(ProtocolError)
        -> Signal<Message>
    {
        switch kind {
        case .flattenMap: return try flattenMap(stage, signal)
        case .switchToLatest: return try switchToLatest(stage, signal)
        }
    }

    /// Every value opens one more inner subscription, which lasts until its subject
    /// terminates: more than `max_buffer_values` open at once ends the subscription with
    /// "limit".
    func flattenMap(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let naming = subjectNaming(StageExpression(try stage.expression(), stage), stage)
        let maxInner = limits.maxBufferValues
        let index = stage.index
        return Signal.deferred {
            let open = StageCounter()
            return signal.flatMap { message in
                open.count += 1
                if open.count > maxInner { return Signal.error(StageFailure.limit(stage: index)) }
                return naming(message).finally { open.count -= 1 }
            }
        }
    }

    func switchToLatest(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let expression = try stage.optionalExpression().map { StageExpression($0, stage) }
        return signal.map(subjectNaming(expression, stage)).switchToLatest()
    }

    /// The signal of the subject a message names (its value, or `expression` on it): a
    /// signal that fails with `eval` naming the stage when the name is not a string, not a
    /// valid subject name, or cannot be looked up; with `unauthorized` when the token may not
    /// subscribe to it.
    private func subjectNaming(_ expression: StageExpression?, _ stage: StageArguments)
        -> @Sendable (Message) -> Signal<Message>
    {
        let lookup = self.lookup
        let index = stage.index
        let name = stage.name
        return { message in
            do throws(ProtocolError) {
                let value: JSONValue
                if let expression {
                    value = try expression.evaluate(message)
                } else {
                    value = try StageFailure.decoded(message.value, stage: index, name: name)
                }
                guard case .string(let subject) = value else {
                    throw StageFailure.eval(
                        "a subject name must be a string, got \(value.typeName)", stage: index, name: name)
                }
                if let problem = SubjectName.problem(withName: subject) {
                    throw StageFailure.eval("bad subject name: \(problem)", stage: index, name: name)
                }
                // A subject the token may not read keeps its code, so the client learns why.
                let failure: @Sendable (ProtocolError) -> ProtocolError = { error in
                    guard error.code != .unauthorized else {
                        var refusal = error
                        refusal.stage = index
                        return refusal
                    }
                    return StageFailure.eval(error.message, stage: index, name: name)
                }
                do throws(ProtocolError) {
                    return try lookup(subject, failure)
                } catch {
                    throw failure(error)
                }
            } catch {
                return Signal.error(error)
            }
        }
    }
}
