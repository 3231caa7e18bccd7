import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// Events out: each subscription's events, written as they come; over the soft limit, the
/// slow-consumer policy (`Session+SlowConsumer`).
extension Session {
    /// The end of every `next` line without a position: the value is the event's last member.
    private static var nextEnd: UnsafeRawBufferPointer { ("}" as StaticString).rawBytes }

    /// Writes a `next` event through `transport` (the session's own, typed as it is where the
    /// caller knows it, so the writes are direct calls), unless the unsent output is over the
    /// soft limit: then `deliverOverSoftLimit` decides. The limit is checked by the same
    /// transport call that writes (one call per delivery).
    @inline(__always)
    func deliverNext<Transport: SessionTransport>(
        _ message: Message, to subscription: SessionSubscription, through transport: Transport
    ) {
        guard !isClosing, !subscription.isFinished else { return }
        if subscription.dropped > 0 || !subscription.waiting.isEmpty {
            // What was dropped, or a conflated value waiting, goes first: room of their own.
            guard !isOverSoftLimit else { return deliverOverSoftLimit(message, to: subscription) }
            writeWaiting(subscription)
        }
        if writeNext(message, subscription, limit: settings.softPendingLimit, transport) {
            stats.counts.delivered &+= 1
        } else {
            deliverOverSoftLimit(message, to: subscription)
        }
    }

    /// Writes `message` as `subscription`'s `next` line, unless the output is over `limit`.
    @inline(__always)
    func writeNext<Transport: SessionTransport>(
        _ message: Message, _ subscription: SessionSubscription, limit: Int, _ transport: Transport
    ) -> Bool {
        if subscription.isPattern {
            return writePatternNext(message, subscription, limit: limit, transport)
        } else if subscription.writesTail {
            return writeNext(message, head: subscription.nextPrefix.bytes, subscription, limit: limit, transport)
        }
        return writeNext(message, head: subscription.nextPrefix.bytes, tail: Self.nextEnd, limit: limit, transport)
    }

    /// Writes `head`, the message's value and `}`, with `,"pos":"EPOCH:SEQ"` before it when the
    /// message has a position the subscription reports and `,"ts":MS` when it asked for times
    /// and the value has one. `key`: a map's key, which `head` names (`Session+MapDelivery`).
    /// Never inlined into the delivery path: its tail on the stack would bring the stack
    /// protector into every delivery.
    @inline(never)
    func writeNext<Transport: SessionTransport>(
        _ message: Message, head: UnsafeRawBufferPointer, _ subscription: SessionSubscription, limit: Int,
        _ transport: Transport, key: ByteBuffer? = nil
    ) -> Bool {
        // A map's lines come this way (`writesTail`), off the plain lines' path.
        if subscription.isMap && key == nil && (message.label.key != nil || message.mark != nil) {
            return writeMapNext(message, subscription, limit: limit, transport)
        }
        let position: (seq: UInt64, prefix: UnsafeRawBufferPointer)? =
            if subscription.sendsPosition(of: message), let seq = message.seq,
                let prefix = message.label.positionPrefix?.bytes
            {
                (seq, prefix)
            } else {
                nil
            }
        let time = subscription.sendsTimes ? message.time : 0
        guard position != nil || time != 0 else {
            return writeNext(message, head: head, tail: Self.nextEnd, key: key, limit: limit, transport)
        }
        // The position (`,"pos":"`, an epoch of at most 32 bytes, `Epoch.isValid`, the seq's
        // digits, at most 20, and `"`: 62 bytes at most), the time (`,"ts":` and at most 19
        // digits) and `}`: 88 bytes at most, put together in a buffer on the stack.
        precondition((position?.prefix.count ?? 0) <= 41, "an epoch longer than 32 bytes")
        var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let (count, digitsEnd) = withUnsafeMutableBytes(of: &storage) { buffer in
            var end = 0
            if let (seq, prefix) = position {
                buffer.copyMemory(from: prefix)
                end =
                    prefix.count
                    + JSONWriter.writeDecimal(
                        seq, into: UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]))
                buffer[end] = UInt8(ascii: "\"")
                end += 1
            }
            let digitsEnd = end - 1
            if time != 0 {
                for byte in Self.timeKey.utf8 {
                    buffer[end] = byte
                    end += 1
                }
                end += JSONWriter.writeDecimal(
                    UInt64(time), into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
            }
            buffer[end] = UInt8(ascii: "}")
            return (end + 1, digitsEnd)
        }
        return withUnsafeBytes(of: &storage) { tail in
            let line = UnsafeRawBufferPointer(rebasing: tail[..<count])
            guard let (seq, prefix) = position else {
                return writeNext(message, head: head, tail: line, key: key, limit: limit, transport)
            }
            let digits = UnsafeRawBufferPointer(rebasing: tail[prefix.count..<digitsEnd])
            return writeNext(
                message, head: head, tail: line, position: EventPosition(prefix: prefix, seq: seq, digits: digits),
                key: key, limit: limit, transport)
        }
    }

    /// What comes before a `next` line's time.
    private static let timeKey = ",\"ts\":"

    /// Writes `head`, the message's value and `tail` as one `next` line, unless the output is
    /// over `limit`; `position`, when the tail encodes one, goes beside it as a value. The
    /// common line, a small published value, is copied straight from the published bytes
    /// (`message` holds the payload until this returns), so nothing is retained or encoded
    /// for it.
    @inline(__always)
    private func writeNext<Transport: SessionTransport>(
        _ message: Message, head: UnsafeRawBufferPointer, tail: UnsafeRawBufferPointer,
        position: EventPosition? = nil, key: ByteBuffer? = nil, limit: Int, _ transport: Transport
    ) -> Bool {
        if let key {
            return writeKeyedNext(
                message, head: head, key: key, tail: tail, position: position, limit: limit, transport)
        }
        if let value = message.publishedBytes, value.count <= ByteBuffer.copyThreshold {
            let written: Bool
            if let cork {
                written = cork.writeNext(head: head, value: value, tail: tail, unlessUnsentOver: limit)
            } else if let position {
                written = transport.writeNext(
                    head: head, value: value, tail: tail, position: position, unlessUnsentOver: limit)
            } else {
                written = transport.writeNext(head: head, value: value, tail: tail, unlessUnsentOver: limit)
            }
            if written {
                stats.counts.bytesOut &+= UInt64(truncatingIfNeeded: head.count &+ value.count &+ tail.count &+ 1)
            }
            return written
        }
        let value = message.value.raw.buffer
        let written: Bool
        if value.count > ByteBuffer.copyThreshold && cork == nil {
            if let position {
                written = transport.writeNext(
                    head: head, sharedValue: value, tail: tail, position: position, unlessUnsentOver: limit)
            } else {
                written = transport.writeNext(head: head, sharedValue: value, tail: tail, unlessUnsentOver: limit)
            }
        } else if cork == nil, let position {
            written = transport.writeNext(
                head: head, value: value.bytes, tail: tail, position: position, unlessUnsentOver: limit)
        } else {
            written = output.writeNext(head: head, value: value.bytes, tail: tail, unlessUnsentOver: limit)
        }
        if written {
            stats.counts.bytesOut &+= UInt64(truncatingIfNeeded: head.count &+ value.count &+ tail.count &+ 1)
        }
        return written
    }

    /// A pattern subscription's line names the value's subject: its head is the
    /// subscription's prefix, the subject's encoded name and `,"value":`, put together on
    /// the stack (never inlined into the delivery path, for the stack protector that brings).
    @inline(never)
    private func writePatternNext<Transport: SessionTransport>(
        _ message: Message, _ subscription: SessionSubscription, limit: Int, _ transport: Transport
    ) -> Bool {
        if message.label.key != nil || message.mark != nil {
            return writeMapNext(message, subscription, limit: limit, transport)
        }
        let prefix = subscription.nextPrefix.bytes
        let subject = message.label.json.bytes
        let valueKey = SessionSubscription.valueKey
        let count = prefix.count + subject.count + valueKey.utf8CodeUnitCount
        return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { head in
            head.copyMemory(from: prefix)
            UnsafeMutableRawBufferPointer(rebasing: head[prefix.count...]).copyMemory(from: subject)
            valueKey.withUTF8Buffer { key in
                UnsafeMutableRawBufferPointer(rebasing: head[(prefix.count + subject.count)...])
                    .copyMemory(from: UnsafeRawBufferPointer(key))
            }
            return writeNext(message, head: UnsafeRawBufferPointer(head), subscription, limit: limit, transport)
        }
    }

    /// Writes a subscription's terminal event and forgets it.
    func deliverTerminal(_ error: (any Error)?, to subscription: SessionSubscription) {
        guard !subscription.isFinished else { return }
        defer { forget(subscription) }
        guard !isClosing else { return }
        // A terminal event is never conflated away, nor the value waiting before it.
        writeWaiting(subscription)
        write(error.map { .error(ProtocolError(wrapping: $0)) } ?? .completed, of: subscription)
    }

    func writeDropped(_ subscription: SessionSubscription) {
        let count = subscription.dropped == SessionSubscription.unknownDropped ? nil : subscription.dropped
        subscription.dropped = 0
        write(.dropped(count: count), of: subscription)
    }

    /// Writes one of `subscription`'s events other than `next`.
    func write(_ event: SessionEvent, of subscription: SessionSubscription) {
        write(.event(event, sid: subscription.sid, sidJSON: subscription.sidJSON))
    }
}
