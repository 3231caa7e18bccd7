import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// `materialize` and `dematerialize`: events as values `{"event":"next","value":V}`,
/// `{"event":"completed"}`, `{"event":"error","code":C,"message":M}` and back.
extension StageCompiler {
    /// A `next` value's bytes go into its event object unchanged.
    func materialize(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let label = defaultLabel
        return signal.materialize().map { event in
            switch event {
            case .next(let message):
                var writer = JSONWriter()
                writer.append("{\"event\":\"next\",\"value\":")
                writer.write(message.value.raw)
                writer.append("}")
                return Message(madeFrom: message, value: Payload(raw: RawJSON(validatedBuffer: writer.makeBuffer())))
            case .completed:
                return Message(label: label, computed: .object(JSONObject([("event", .string("completed"))])))
            case .error(let error):
                let failure = ProtocolError(wrapping: error)
                return Message(
                    label: label,
                    computed: .object(
                        JSONObject([
                            ("event", .string("error")), ("code", .string(failure.code.rawValue)),
                            ("message", .string(failure.message)),
                        ])))
            }
        }
    }

    /// An error event's `code` is kept when it is a protocol code, else it becomes `eval`.
    /// Anything but an event object ends the subscription with `eval`.
    func dematerialize(_ stage: StageArguments, _ signal: Signal<Message>) throws(ProtocolError) -> Signal<Message> {
        try stage.checkNoOtherArguments([])
        let index = stage.index
        let name = stage.name
        return signal.tryMap { message -> Event<Message> in
            let value = try StageFailure.decoded(message.value, stage: index, name: name)
            guard case .object(let object) = value, case .string(let kind)? = object["event"] else {
                throw StageFailure.eval("not an event object: \(value.typeName)", stage: index, name: name)
            }
            switch kind {
            case "next":
                return .next(Message(madeFrom: message, computed: object["value"] ?? .null))
            case "completed":
                return .completed
            case "error":
                guard case .string(let text)? = object["message"] else {
                    throw StageFailure.eval("an error event needs a string 'message'", stage: index, name: name)
                }
                var code = ErrorCode.eval
                if case .string(let given)? = object["code"], let known = ErrorCode(rawValue: given) { code = known }
                return .error(ProtocolError(code, text))
            default:
                throw StageFailure.eval("unknown event '\(kind)'", stage: index, name: name)
            }
        }
        .dematerialize()
    }
}
