import RunnelProtocol

/// A subscription's event other than `next`, as a value, handed to a transport
/// (`SessionOutput.event`): a transport with a framing of its own (Server-Sent Events) frames
/// the value; the line protocols write its line (`ServerLineWriter.line(for:)`). A `next` event's position
/// travels as an `EventPosition` beside its pieces.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
enum SessionEvent {
    case completed
    /// The subscription ended with `error`.
    case error(ProtocolError)
    /// `count` values were dropped before the next event (by the slow-consumer policy, or
    /// missed from other nodes of a cluster); nil when how many is not known.
    case dropped(count: UInt64?)

    /// Whether the subscription ends with it.
    var isTerminal: Bool {
        if case .dropped = self { return false }
        return true
    }
}

/// A `next` event's position as a value: the subject's epoch (as encoded once on its label)
/// and the value's seq, with the seq's digits as the session wrote them for the line's tail,
/// so a transport that frames positions its own way (an SSE `id:`) neither reads the tail nor
/// formats the number again. It holds no reference: passing it retains nothing.
///
/// Thread rules: loop thread only, for one delivery. Lifetime rule: `epochAndColon` points
/// into the label of the message being delivered and `seqDigits` into the session's stack;
/// both live for the call only.
struct EventPosition {
    /// `EPOCH:`.
    let epochAndColon: UnsafeRawBufferPointer
    let seq: UInt64
    /// `seq` in decimal.
    let seqDigits: UnsafeRawBufferPointer

    /// The position of `seq` on the subject whose label's position prefix is `prefix`.
    @inline(__always)
    init(prefix: UnsafeRawBufferPointer, seq: UInt64, digits: UnsafeRawBufferPointer) {
        epochAndColon = UnsafeRawBufferPointer(rebasing: prefix[SubjectLabel.positionKey.utf8CodeUnitCount...])
        self.seq = seq
        seqDigits = digits
    }
}
