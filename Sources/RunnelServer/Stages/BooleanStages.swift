import Runnel
import RunnelProtocol

/// `not`, `and`, `or`, `any`, `all`: the library's boolean operators, fed by a `tryMap` that
/// reads the booleans out of each value (anything else ends the subscription with `eval`).
extension StageCompiler {
    func not(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let index = stage.index
        return keepingLabels(signal) { message in
            guard case .bool(let flag) = try StageFailure.decoded(message.value, stage: index, name: "not") else {
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
        let expression = try stage.optionalExpression().map { StageExpression($0, stage) }
        return keepingLabels(signal, { $0 }) { messages in
            guard let expression else { return messages.any() }
            return messages.tested(by: expression).any(\.passed)
        }
    }

    /// `false` at the first value failing `expr`, else `true` at completion.
    func all(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments(["expr"])
        let expression = StageExpression(try stage.expression(), stage)
        return keepingLabels(signal, { $0 }) { $0.tested(by: expression).all(\.passed) }
    }

    /// A value's array of booleans.
    private static func booleans(_ message: Message, stage: Int, name: String) throws(ProtocolError) -> [Bool] {
        guard case .array(let items) = try StageFailure.decoded(message.value, stage: stage, name: name) else {
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

    /// `operation` (a library operator on `Input`) applied to what `extract` reads from each
    /// message; each result keeps the subject and position of the newest message taken in
    /// before it (the one it came from, for a value-for-value operator), or none before any.
    private func keepingLabels<Input: Sendable>(
        _ signal: Signal<Message>, _ extract: @escaping @Sendable (Message) throws -> Input,
        through operation: @escaping @Sendable (Signal<Input>) -> Signal<Bool>
    ) -> Signal<Message> {
        let label = defaultLabel
        return Signal.deferred {
            let latest = LatestOrigin(label)
            return operation(
                signal.tryMap { message in
                    latest.label = message.label
                    latest.seq = message.seq
                    latest.time = message.time
                    return try extract(message)
                }
            ).map { Message(label: latest.label, computed: .bool($0), seq: latest.seq, time: latest.time) }
        }
    }
}

/// The subject and seq of the newest message an operator took in, read back when its result
/// comes out (synchronously, in the same send or at completion). Loop thread only, one per
/// subscription.
final class LatestOrigin: @unchecked Sendable {
    var label: SubjectLabel
    var seq: UInt64?
    var time: Int64 = 0
    init(_ label: SubjectLabel) { self.label = label }
}
