/// A subscription's event other than `next`, as a value, handed to a transport beside its line
/// (`SessionTransport.writeEvent`): a transport with a framing of its own (Server-Sent Events)
/// writes it from the value; the line protocols write the line. A `next` event's position
/// travels as an `EventPosition` beside its pieces.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
enum SessionEvent {
    case completed
    /// The subscription ended with `error`.
    case error(ProtocolError)
    /// `count` values were dropped by the slow-consumer policy before the next event.
    case dropped(count: UInt64)

    /// Whether the subscription ends with it.
    var isTerminal: Bool {
        if case .dropped = self { return false }
        return true
    }
}

/// A `next` event's position as a value: the subject's label (whose epoch is encoded once)
/// and the value's seq. The line's tail encodes the same position; a transport that frames
/// positions its own way (an SSE `id:`) reads this instead.
///
/// Thread rules: loop thread only, borrowed for one delivery. Lifetime rule: the label is
/// held by the message being delivered; `epochAndColon` points into it.
struct EventPosition {
    let label: SubjectLabel
    let seq: UInt64

    /// `EPOCH:`, borrowed from the label's encoded position prefix.
    @inline(__always)
    var epochAndColon: UnsafeRawBufferPointer {
        let prefix = label.positionPrefix!.bytes
        return UnsafeRawBufferPointer(rebasing: prefix[SubjectLabel.positionKey.utf8CodeUnitCount...])
    }
}
