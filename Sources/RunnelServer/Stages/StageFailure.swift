import RunnelExpression
import RunnelJSON
import RunnelProtocol

/// The run-time errors a stage ends its subscription with: code `eval`, naming the stage.
enum StageFailure {
    /// `eval` with `message`, from stage `stage` (named `name`).
    static func eval(_ message: String, stage: Int, name: String) -> ProtocolError {
        ProtocolError(.eval, "\(name): \(message)", stage: stage)
    }

    /// An accumulating stage reached `max_buffer_values`: `eval` with the message "limit".
    static func limit(stage: Int) -> ProtocolError {
        ProtocolError(.eval, "limit", stage: stage)
    }

    /// `value` as a tree: an `eval` error when its bytes hold a number too large for a Double.
    static func decoded(_ value: Payload, stage: Int, name: String) throws(ProtocolError) -> JSONValue {
        do {
            return try value.decoded()
        } catch {
            throw eval("cannot decode the value: \(error)", stage: stage, name: name)
        }
    }
}
