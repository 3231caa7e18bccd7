import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// A map's events out (version 1.3): a value written to a key is a `next` line naming the key
/// (`{"ev":"next","sid":S,"key":K,"value":V}`, on a pattern subscription with `subject`
/// before the key), a removal a `removed` event, and the end of a subscription's opening a
/// `synced` event. They go the way every `next` goes (the soft limit, conflation per key), but
/// `synced`, which every map subscription gets exactly once, is written whatever the output
/// holds, as a terminal event is.
///
/// Thread rules: loop thread only, as the rest of the session.
extension Session {
    /// What comes between a key's line head and its value.
    private static let keyMember: StaticString = ",\"key\":"

    /// Writes `message`, met by a map subscription or by a pattern one as a map's change,
    /// unless the output is over `limit` (but for `synced`). Never inlined into the delivery
    /// path: its head on the stack would bring the stack protector into every delivery
    /// (bench/README.md, "Figures behind comments in the code").
    @inline(never)
    func writeMapNext<Transport: SessionTransport>(
        _ message: Message, _ subscription: SessionSubscription, limit: Int, _ transport: Transport
    ) -> Bool {
        if let mark = message.mark { return writeMark(mark, of: message, subscription, limit: limit, transport) }
        let prefix = subscription.nextPrefix.bytes
        guard let key = message.label.keyJSON else {
            // A value of another subject, which a stage brought in (`merge`): a plain line.
            return writeNext(message, head: prefix, subscription, limit: limit, transport)
        }
        // A subject's head ends in `,"value":`, which goes after the key; a pattern's in
        // `,"subject":`, which the subject's name follows.
        let valueKey = SessionSubscription.valueKey
        let start =
            subscription.isPattern
            ? UnsafeRawBufferPointer(prefix)
            : UnsafeRawBufferPointer(rebasing: prefix[..<(prefix.count - valueKey.utf8CodeUnitCount)])
        let subject = subscription.isPattern ? message.label.json.bytes : UnsafeRawBufferPointer(start: nil, count: 0)
        let keyBytes = key.bytes
        let parts = [
            start, subject, Self.keyMember.rawBytes, keyBytes, valueKey.rawBytes,
        ]
        let count = parts.reduce(0) { $0 + $1.count }
        return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { head in
            var end = 0
            for part in parts where part.count > 0 {
                UnsafeMutableRawBufferPointer(rebasing: head[end...]).copyMemory(from: part)
                end += part.count
            }
            return writeNext(
                message, head: UnsafeRawBufferPointer(head), subscription, limit: limit, transport, key: key)
        }
    }

    /// Writes a map's `next` line through `transport` (or the cork), its value copied: a
    /// transport that frames values its own way puts the key beside it (`writeKeyedNext`).
    func writeKeyedNext<Transport: SessionTransport>(
        _ message: Message, head: UnsafeRawBufferPointer, key: ByteBuffer, tail: UnsafeRawBufferPointer,
        position: EventPosition?, limit: Int, _ transport: Transport
    ) -> Bool {
        let payload = message.value
        let written = withExtendedLifetime(payload) {
            let value = message.publishedBytes ?? payload.raw.buffer.bytes
            if let cork {
                return cork.writeKeyedNext(
                    head: head, key: key, value: value, tail: tail, position: position, unlessUnsentOver: limit)
            }
            return transport.writeKeyedNext(
                head: head, key: key, value: value, tail: tail, position: position, unlessUnsentOver: limit)
        }
        if written {
            let count = head.count &+ tail.count &+ 1 &+ (message.publishedBytes?.count ?? payload.raw.buffer.count)
            stats.counts.bytesOut &+= UInt64(truncatingIfNeeded: count)
        }
        return written
    }

    /// `synced`, with the map's position when the subscription reports positions.
    func writeSynced(_ message: Message, _ subscription: SessionSubscription) {
        write(.synced(position: subscription.sendsPosition(of: message) ? message.position : nil), of: subscription)
    }

    /// A removal's `removed` event, unless the output is over `limit`; `synced`, always.
    private func writeMark<Transport: SessionTransport>(
        _ mark: Message.Mark, of message: Message, _ subscription: SessionSubscription, limit: Int,
        _ transport: Transport
    ) -> Bool {
        guard mark != .synced else {
            writeSynced(message, subscription)
            return true
        }
        guard !(cork?.hasUnsentBytes(over: limit) ?? transport.hasUnsentBytes(over: limit)),
            let key = message.label.keyJSON
        else { return false }
        let removal = RemovedKey(
            subject: subscription.isPattern ? message.label.json : nil, key: key, reason: mark.reason,
            position: subscription.sendsPosition(of: message) ? message.position : nil,
            time: subscription.sendsTimes ? message.time : nil)
        write(.removed(removal), of: subscription)
        return true
    }
}
