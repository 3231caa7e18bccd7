/// The values of one NATS message a node sends into a plain subject (`ClusterLink`): one value
/// as it is, or a batch of several, consecutive in the sender's sequence for the subject, each
/// framed as its length (4 bytes, big-endian) and its bytes. A batch's reply subject ends
/// `FIRST-COUNT` where a lone value's ends `SEQ`. What one loop turn publishes into one subject
/// leaves in one message: cnats's work per message (a copy, its parser, a hand-off to the
/// loop and to its collector thread), on the sending node and on each receiving one, is then
/// a batch's, not a value's (bench/README.md, "Clusters").
///
/// Thread rules: a value. Lifetime rule: owns its payload.
struct ClusterValueBatch: Sequence {
    /// The bytes a batch holds at most, its frames included (and never more than the NATS
    /// server takes in one message): a value that would pass it starts the next one.
    static let limit = 64 * 1024
    /// A frame's length prefix.
    static let frameHeader = 4

    let payload: [UInt8]
    /// How many values it holds.
    let count: Int
    private let isFramed: Bool

    /// The values of a message whose reply subject's last token is `token` (`SEQ`, or
    /// `FIRST-COUNT`): the first one's sequence number and the values; nil when the token or
    /// the frames do not add up (not a message a node sent).
    static func read(_ payload: [UInt8], token: Substring) -> (first: UInt64, values: ClusterValueBatch)? {
        guard let dash = token.firstIndex(of: "-") else {
            guard let seq = UInt64(token) else { return nil }
            return (seq, ClusterValueBatch(payload: payload, count: 1, isFramed: false))
        }
        guard let first = UInt64(token[..<dash]), let count = Int(token[token.index(after: dash)...]), count > 1,
            framesCount(payload) == count
        else { return nil }
        return (first, ClusterValueBatch(payload: payload, count: count, isFramed: true))
    }

    /// Appends a value's frame to a batch's payload.
    static func appendFrame(_ value: UnsafeRawBufferPointer, to payload: inout [UInt8]) {
        let length = UInt32(value.count)
        payload.append(UInt8(truncatingIfNeeded: length >> 24))
        payload.append(UInt8(truncatingIfNeeded: length >> 16))
        payload.append(UInt8(truncatingIfNeeded: length >> 8))
        payload.append(UInt8(truncatingIfNeeded: length))
        payload.append(contentsOf: value)
    }

    /// The reply subject's last token of a batch of `count` values from `first`.
    static func token(first: UInt64, count: Int) -> String { count == 1 ? String(first) : "\(first)-\(count)" }

    /// How many whole frames `payload` is made of; nil when its last one is cut short.
    private static func framesCount(_ payload: [UInt8]) -> Int? {
        var offset = 0
        var frames = 0
        while offset < payload.count {
            guard let end = frameEnd(payload, at: offset) else { return nil }
            offset = end
            frames += 1
        }
        return frames
    }

    /// Where the frame at `offset` ends; nil when it passes the payload's end.
    private static func frameEnd(_ payload: [UInt8], at offset: Int) -> Int? {
        guard payload.count - offset >= frameHeader else { return nil }
        var length = 0
        for byte in payload[offset..<offset + frameHeader] { length = length << 8 | Int(byte) }
        let end = offset + frameHeader + length
        return end <= payload.count ? end : nil
    }

    func makeIterator() -> Iterator { Iterator(batch: self) }

    /// The values in order, each a slice of the payload.
    struct Iterator: IteratorProtocol {
        let batch: ClusterValueBatch
        var offset = 0

        mutating func next() -> ArraySlice<UInt8>? {
            let payload = batch.payload
            guard batch.isFramed else {
                defer { offset = payload.count + 1 }
                return offset == 0 ? payload[...] : nil
            }
            // The frames were counted when the batch was read: each is whole.
            guard offset < payload.count, let end = ClusterValueBatch.frameEnd(payload, at: offset) else { return nil }
            defer { offset = end }
            return payload[(offset + ClusterValueBatch.frameHeader)..<end]
        }
    }
}
