/// A reply as a value, handed to a transport beside its line (`SessionTransport.writeReply`):
/// a transport that answers in a framing of its own (an SSE stream's HTTP answer) reads it
/// instead of the line's bytes; the line protocols write the line.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
enum SessionReply {
    /// A `sub` succeeded: the subscription's sid, and whether it resumed where `from` asked
    /// (nil without `from`).
    case subscribed(sid: String, resumed: Bool?)
    /// A request failed: the error the line reports.
    case failed(ProtocolError)
}
