import RunnelUV

/// The start of every `next` line of one subscription, encoded once when it subscribes.
///
/// For a subscription to a subject it is `{"ev":"next","sid":"<sid>","value":`; for a pattern
/// subscription it is `{"ev":"next","sid":"<sid>","subject":` and the source subject's quoted
/// name (an `EncodedSubjectName`, encoded once per subject and shared by all pattern
/// subscriptions) and `,"value":` follow as further pieces. Immutable and `Sendable`.
public struct NextEventPrefix: Sendable {
    public let head: ByteBuffer
    public let isPattern: Bool

    public init(sid: String, isPattern: Bool = false) {
        var writer = JSONWriter(reservingCapacity: 32 + sid.utf8.count)
        writer.append("{\"ev\":\"next\",\"sid\":")
        writer.writeString(sid)
        writer.append(isPattern ? ",\"subject\":" : ",\"value\":")
        head = writer.makeBuffer()
        self.isPattern = isPattern
    }
}

/// A subject's name as a JSON string (quotes and escapes included), encoded once per subject
/// for the `subject` member of pattern subscriptions' `next` lines. Immutable and `Sendable`.
public struct EncodedSubjectName: Sendable {
    public let quoted: ByteBuffer

    public init(_ name: String) {
        var writer = JSONWriter(reservingCapacity: name.utf8.count + 2)
        writer.writeString(name)
        quoted = writer.makeBuffer()
    }
}

/// One `next` line as shared pieces, ready for a vectored write: nothing in it was encoded
/// for this subscriber. Three pieces (prefix, value, `}\n`) for a subject subscription, five
/// (prefix, subject name, `,"value":`, value, `}\n`) for a pattern subscription.
/// Immutable and `Sendable`; holding it keeps the buffers alive.
public struct NextEventLine: Sendable {
    private let head: ByteBuffer
    private let subject: ByteBuffer?
    private let value: ByteBuffer

    /// `,"value":`, the piece between a pattern line's subject and its value.
    public static let valueKey = ByteBuffer(Array(",\"value\":".utf8))
    /// `}\n`, the end of every line.
    public static let lineEnd = ByteBuffer(Array("}\n".utf8))

    /// The line of a subscription to a subject.
    public init(prefix: NextEventPrefix, value: RawJSON) {
        precondition(!prefix.isPattern, "a pattern subscription's line needs the source subject")
        head = prefix.head
        subject = nil
        self.value = value.buffer
    }

    /// The line of a pattern subscription, naming the subject the value came from.
    public init(prefix: NextEventPrefix, subject: EncodedSubjectName, value: RawJSON) {
        precondition(prefix.isPattern, "a subject subscription's line carries no subject")
        head = prefix.head
        self.subject = subject.quoted
        self.value = value.buffer
    }

    /// The number of pieces: 3 or 5.
    public var count: Int { subject == nil ? 3 : 5 }

    /// The piece at `index`, in write order.
    public subscript(index: Int) -> ByteBuffer {
        if let subject {
            switch index {
            case 0: return head
            case 1: return subject
            case 2: return Self.valueKey
            case 3: return value
            default:
                precondition(index == 4, "piece index out of range")
                return Self.lineEnd
            }
        }
        switch index {
        case 0: return head
        case 1: return value
        default:
            precondition(index == 2, "piece index out of range")
            return Self.lineEnd
        }
    }

    /// The total length of the line in bytes.
    public var byteCount: Int {
        head.count + value.count + Self.lineEnd.count + (subject.map { $0.count + Self.valueKey.count } ?? 0)
    }

    /// The whole line in one array (a copy; for tests and for transports that cannot gather).
    public var joined: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for index in 0..<count {
            let piece = self[index]
            withExtendedLifetime(piece) { bytes.append(contentsOf: piece.bytes) }
        }
        return bytes
    }
}
