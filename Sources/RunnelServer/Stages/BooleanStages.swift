import Runnel

/// `not`, `and`, `or`, `any`, `all`: the library's boolean operators, fed by a `tryMap` that
/// reads the booleans out of each value (anything else ends the subscription with `eval`).
extension StageCompiler {
    func not(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let index = stage.index
        return keepingLabels(signal) { message in
            guard case .bool(let flag) = try StageFailure.decoded(message, stage: index, name: "not") else {
                throw StageFailure.eval("not needs a boolean", stage: index, name: "not")
            }
            return flag
        } through: {
            $0.not()
        }
    }

    func and(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let index = stage.index
        return keepingLabels(signal) {
            try Self.booleans($0, stage: index, name: "and")
        } through: {
            $0.and()
        }
    }

    func or(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let index = stage.index
        return keepingLabels(signal) {
            try Self.booleans($0, stage: index, name: "or")
        } through: {
            $0.or()
        }
    }

    /// `true` at the first value (passing `expr`, when given), else `false` at completion.
    func any(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let label = defaultLabel
        let found: Signal<Bool>
        if let compiled = try stage.optionalExpression() {
            found = signal.tested(by: StageExpression(compiled, stage)).any(\.passed)
        } else {
            found = signal.any()
        }
        return found.map { Message(label: label, computed: .bool($0)) }
    }

    /// `false` at the first value failing `expr`, else `true` at completion.
    func all(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let label = defaultLabel
        let expression = StageExpression(try stage.expression(), stage)
        return signal.tested(by: expression).all(\.passed).map { Message(label: label, computed: .bool($0)) }
    }

    /// A value's array of booleans.
    private static func booleans(_ message: Message, stage: Int, name: String) throws(ProtocolError) -> [Bool] {
        guard case .array(let items) = try StageFailure.decoded(message, stage: stage, name: name) else {
            throw StageFailure.eval("\(name) needs an array of booleans", stage: stage, name: name)
        }
        var flags: [Bool] = []
        flags.reserveCapacity(items.count)
        for item in items {
            guard case .bool(let flag) = item else {
                throw StageFailure.eval("\(name) needs an array of booleans", stage: stage, name: name)
            }
            flags.append(flag)
        }
        return flags
    }

    /// `operation` (a value-for-value library operator on `Input`) applied to what `extract`
    /// reads from each message; each result keeps the subject of the message it came from.
    private func keepingLabels<Input: Sendable>(
        _ signal: Signal<Message>, _ extract: @escaping @Sendable (Message) throws -> Input,
        through operation: @escaping @Sendable (Signal<Input>) -> Signal<Bool>
    ) -> Signal<Message> {
        let label = defaultLabel
        return Signal.deferred {
            let latest = LatestLabel(label)
            return operation(
                signal.tryMap { message in
                    latest.label = message.label
                    return try extract(message)
                }
            ).map { Message(label: latest.label, computed: .bool($0)) }
        }
    }
}

/// The subject of the message a one-for-one operator is turning into a result, read back
/// when the result comes out (synchronously, in the same send). Loop thread only, one per
/// subscription.
final class LatestLabel: @unchecked Sendable {
    var label: SubjectLabel
    init(_ label: SubjectLabel) { self.label = label }
}
