import RunnelBytes
import RunnelProtocol

/// A subscription's event other than `next`, as a value, handed to a transport
/// (`SessionOutput.event`): a transport with a framing of its own (Server-Sent Events) frames
/// the value; the line protocols write its line (`ServerLineWriter.line(for:)`). A `next` event's position
/// travels as an `EventPosition` beside its pieces.
///
/// Thread rules: a value, made and used on the loop thread. Lifetime rule: owns its fields.
package enum SessionEvent {
    case completed
    /// The subscription ended with `error`.
    case error(ProtocolError)
    /// `count` values were dropped before the next event (by the slow-consumer policy, or
    /// missed from other nodes of a cluster); nil when how many is not known.
    case dropped(count: UInt64?)
    /// A map subscription's table is current: its snapshot (or the changes it resumed with)
    /// is out (version 1.3); at the map's position, when the subscription reports positions.
    case synced(position: Position?)
    /// A map's key was removed.
    case removed(RemovedKey)

    /// Whether the subscription ends with it.
    package var isTerminal: Bool {
        switch self {
        case .completed, .error: return true
        case .dropped, .synced, .removed: return false
        }
    }
}

/// A `removed` event's members: the subject (on a pattern subscription) and the key as JSON
/// strings, the reason, and the removal's position and time when the subscription reports
/// them. Thread rules: a value. Lifetime rule: shares the labels' encoded names.
package struct RemovedKey {
    let subject: ByteBuffer?
    let key: ByteBuffer
    let reason: StaticString
    package let position: Position?
    let time: Int64?

    /// The members after `sid`, as the line protocols and SSE's `data:` write them.
    package func write(into line: inout ServerLineWriter, withPosition: Bool) {
        if let subject { line.member("subject", json: { $0.append(raw: subject) }) }
        line.member("key", json: { $0.append(raw: key) })
        line.member("reason", string: reason.description)
        if withPosition, let position { line.member("pos", string: position.description) }
        if let time { line.member("ts", integer: time) }
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
package struct EventPosition {
    /// `EPOCH:`.
    package let epochAndColon: UnsafeRawBufferPointer
    let seq: UInt64
    /// `seq` in decimal.
    package let seqDigits: UnsafeRawBufferPointer

    /// The position of `seq` on the subject whose label's position prefix is `prefix`.
    @inline(__always)
    init(prefix: UnsafeRawBufferPointer, seq: UInt64, digits: UnsafeRawBufferPointer) {
        epochAndColon = UnsafeRawBufferPointer(rebasing: prefix[SubjectLabel.positionKey.utf8CodeUnitCount...])
        self.seq = seq
        seqDigits = digits
    }
}
