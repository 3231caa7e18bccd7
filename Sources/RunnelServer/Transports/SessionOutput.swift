import RunnelBytes
import RunnelProtocol

/// What a session writes to its transport besides `next` events, as a value: each transport
/// encodes it its own way. The line protocols (TCP, WebSocket) write its line, made by one rule
/// (`ServerLineWriter.line(for:)`); an SSE stream frames it as events, or answers its request
/// with it. Nothing is encoded that a transport does not write.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
package enum SessionOutput {
    /// The reply to a request.
    case reply(SessionReply)
    /// A subscription's event other than `next`, for the subscription `sid` (`sidJSON`: the
    /// sid as a JSON string, as its lines carry it).
    case event(SessionEvent, sid: String, sidJSON: ByteBuffer)
    /// The connection's last line: the server ends it, saying why.
    case closing(ProtocolError)
}

extension ServerLineWriter {
    /// `output`'s line, the one encoding of a reply, an event and the `closing` line.
    package static func line(for output: SessionOutput) -> ServerLineWriter {
        switch output {
        case .reply(let reply):
            return Self.reply(reply)
        case .event(let event, _, let sidJSON):
            switch event {
            case .completed:
                return Self.event("completed", sid: sidJSON)
            case .error(let error):
                var line = Self.event("error", sid: sidJSON)
                line.members(of: error)
                return line
            case .dropped(let count):
                var line = Self.event("dropped", sid: sidJSON)
                if let count { line.member("count", integer: count) }
                return line
            case .synced(let position):
                var line = Self.event("synced", sid: sidJSON)
                if let position { line.member("pos", string: position.description) }
                return line
            case .removed(let removal):
                var line = Self.event("removed", sid: sidJSON)
                removal.write(into: &line, withPosition: true)
                return line
            }
        case .closing(let reason):
            return Self.closing(reason)
        }
    }
}
