import RunnelCompression

/// What a `WebSocketFrameReader` finds in a client's bytes. Calls come during `read(_:)` or
/// `resume()`, in the order the client sent; after `didFail` or `didReadClose`, none.
public protocol WebSocketFrameReaderDelegate: AnyObject {
    /// One whole text message, valid UTF-8 of at most `maxMessageBytes`; its bytes are valid
    /// only during the call.
    func frameReader(_ reader: WebSocketFrameReader, didReadText message: UnsafeRawBufferPointer)
    /// A ping, to be answered with a pong carrying `payload` (at most 125 bytes).
    func frameReader(_ reader: WebSocketFrameReader, didReadPing payload: UnsafeRawBufferPointer)
    /// The client's close frame, with its code (nil when it sent none): it sends nothing more.
    func frameReader(_ reader: WebSocketFrameReader, didReadClose code: WebSocketCloseCode?)
    /// The client broke the protocol: the connection is to be closed with `code`.
    func frameReader(_ reader: WebSocketFrameReader, didFail code: WebSocketCloseCode, reason: String)
}

/// Reads a client's WebSocket frames (RFC 6455) into messages: each frame's head (lengths in
/// their shortest form, control frames short and unfragmented, masked, no reserved bits), its
/// payload unmasked eight bytes at a time, fragments put together in order with control
/// frames between them, the message length limit, UTF-8 checked as the bytes arrive, and the
/// close frame's code and reason. Which failure closes with which code is docs/protocol.md's:
/// binary 1003, too long 1009, not UTF-8 1007, anything else 1002.
///
/// With permessage-deflate agreed (an `inflater`), RSV1 on a message's first frame marks it
/// compressed: its payload is gathered as it comes and inflated at its end, bounded by the
/// same limit (a decompression bomb is 1009), then checked as UTF-8. RSV1 anywhere else, or
/// without the agreement, and RSV2 or RSV3 always, are 1002: the one check of the reserved
/// bits is `beginFrame`'s.
///
/// Not wslay: its frame reader copies every read into a buffer of its own and unmasks a byte
/// at a time, the largest cost of the server over WebSocket; see
/// docs/decisions/0008-websocket-frames-and-compression.md.
///
/// Thread rules: not thread-safe; one owner (a connection's transport, on the loop thread).
/// Lifetime rule: does not hold its delegate, which must outlive it (its owner).
public final class WebSocketFrameReader {
    /// Not weak: a weakly referenced object's every retain and release takes Swift's slow
    /// side-table path. Its owner is its delegate, and calls it only while it lives.
    public unowned(unsafe) var delegate: (any WebSocketFrameReaderDelegate)?
    /// The longest text message accepted; a longer one fails with 1009.
    public let maxMessageBytes: Int

    /// The input not yet read, during `read(_:)`.
    private var input = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Input kept while paused.
    private var held: [UInt8] = []
    public private(set) var isPaused = false
    /// Set at a close or a failure: nothing more is read.
    private var isFinished = false

    /// The head of the frame being read, until it is complete (2 to 14 bytes).
    private var head: [UInt8] = []
    /// Whether a head has been read and its payload is being read.
    private var isInPayload = false
    /// Payload bytes of the current frame still to come.
    private var frameRemaining = 0
    /// Payload bytes of the current frame read so far (the mask's phase).
    private var frameOffset = 0
    private var frameOpcode = WebSocketOpcode.continuation
    private var frameIsFinal = false
    /// The frame's mask key, its four bytes loaded in memory order.
    private var maskKey: UInt32 = 0
    /// Whether a text message is in progress (a fragment without FIN has been read).
    private var isInMessage = false
    /// The message in progress, unmasked.
    private let message = GrowableBuffer()
    private var utf8 = UTF8Validator()
    /// The control frame in progress, unmasked (at most 125 bytes).
    private let control = GrowableBuffer()

    /// Whether the message in progress is compressed (RSV1 on its first frame).
    private var isCompressed = false
    /// Inflates compressed messages; nil without permessage-deflate.
    private let inflater: WebSocketInflater?
    /// A compressed message, inflated.
    private let inflated = GrowableBuffer()

    public convenience init(maxMessageBytes: Int) { self.init(maxMessageBytes: maxMessageBytes, inflater: nil) }

    /// A reader of a WebSocket with permessage-deflate agreed, its client's window reset after
    /// each message when `clientNoContextTakeover` (the fuzz package's way in; the transport
    /// passes its inflater).
    public convenience init(maxMessageBytes: Int, clientNoContextTakeover: Bool) {
        self.init(
            maxMessageBytes: maxMessageBytes, inflater: WebSocketInflater(resetsEachMessage: clientNoContextTakeover))
    }

    package init(maxMessageBytes: Int, inflater: WebSocketInflater?) {
        self.maxMessageBytes = maxMessageBytes
        self.inflater = inflater
        head.reserveCapacity(14)
    }

    /// Reads the next bytes from the client. While paused they are kept, unread.
    public func read(_ bytes: UnsafeRawBufferPointer) {
        guard !isFinished else { return }
        guard !isPaused && held.isEmpty else {
            held.append(contentsOf: bytes)
            return
        }
        input = bytes
        readFrames()
        if !input.isEmpty && !isFinished { held.append(contentsOf: input) }
        input = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// Stops handing over messages, after the one being handed over, until `resume()`.
    public func pause() { isPaused = true }

    /// Hands over what was read meanwhile, then goes on reading.
    public func resume() {
        guard isPaused else { return }
        isPaused = false
        let kept = held
        held = []
        kept.withUnsafeBytes { read($0) }
    }

    /// Reads heads and payloads until the input is used up, or the reader is paused or finished.
    private func readFrames() {
        while !isFinished && !isPaused {
            if isInPayload {
                guard frameRemaining == 0 || !input.isEmpty else { return }
                let count = min(frameRemaining, input.count)
                readPayload(UnsafeRawBufferPointer(rebasing: input[..<count]))
                input = UnsafeRawBufferPointer(rebasing: input[count...])
                if frameRemaining == 0 { endFrame() }
            } else if input.isEmpty {
                return
            } else if readHead() {
                isInPayload = true
                if frameRemaining == 0 { endFrame() }
            }
        }
    }

    /// Takes the head's bytes from the input; true once the head is complete and checked. A
    /// head that is whole in the input, the common case, is read where it is.
    private func readHead() -> Bool {
        if head.isEmpty, input.count >= 2 {
            let length = Self.headLength(secondByte: input[1])
            if input.count >= length {
                defer { input = UnsafeRawBufferPointer(rebasing: input[length...]) }
                return beginFrame(head: UnsafeRawBufferPointer(rebasing: input[..<length]))
            }
        }
        while true {
            let wanted = head.count < 2 ? 2 : Self.headLength(secondByte: head[1])
            guard head.count < wanted else { break }
            guard !input.isEmpty else { return false }
            let count = min(wanted - head.count, input.count)
            head.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<count]))
            input = UnsafeRawBufferPointer(rebasing: input[count...])
        }
        defer { head.removeAll(keepingCapacity: true) }
        return head.withUnsafeBytes { beginFrame(head: $0) }
    }

    /// The length of a head whose second byte is `secondByte`: 2, an extended length of 2 or
    /// 8 bytes, a mask key of 4.
    @inline(__always)
    private static func headLength(secondByte: UInt8) -> Int {
        let length = secondByte & 0x7F
        return 2 + (length == 126 ? 2 : length == 127 ? 8 : 0) + (secondByte & 0x80 != 0 ? 4 : 0)
    }

    /// Checks a complete head and sets the frame up; false after a failure.
    private func beginFrame(head: UnsafeRawBufferPointer) -> Bool {
        frameIsFinal = head[0] & 0x80 != 0
        let lengthCode = head[1] & 0x7F
        var length = Int(lengthCode)
        var index = 2
        if lengthCode == 126 {
            length = Int(head[2]) << 8 | Int(head[3])
            index = 4
            guard length >= 126 else { return fail(.protocolError, "a 16-bit length under 126") }
        } else if lengthCode == 127 {
            guard head[2] & 0x80 == 0 else { return fail(.protocolError, "a 64-bit length with its top bit set") }
            length = 0
            for byte in head[2..<10] { length = length << 8 | Int(byte) }
            index = 10
            guard length > 0xFFFF else { return fail(.protocolError, "a 64-bit length under 65536") }
        }
        guard head[1] & 0x80 != 0 else { return fail(.protocolError, "a client frame must be masked") }
        maskKey = head.loadUnaligned(fromByteOffset: index, as: UInt32.self)
        guard let opcode = WebSocketOpcode(rawValue: head[0] & 0x0F) else {
            return fail(.protocolError, "reserved opcode \(head[0] & 0x0F)")
        }
        let reserved = head[0] & 0x70
        if reserved != 0 {
            guard reserved == 0x40, inflater != nil else {
                return fail(.protocolError, "reserved bits set: no extension was agreed that uses them")
            }
            guard opcode == .text || opcode == .binary else {
                return fail(.protocolError, "RSV1 on a frame other than a message's first")
            }
        }
        frameOpcode = opcode
        frameRemaining = length
        frameOffset = 0
        switch opcode {
        case .text, .binary:
            guard !isInMessage else {
                return fail(.protocolError, "a new message before the last one's final fragment")
            }
            guard opcode == .text else { return fail(.unsupportedData, "binary messages are not supported: send text") }
            isInMessage = true
            isCompressed = reserved != 0
        case .continuation:
            guard isInMessage else { return fail(.protocolError, "a continuation frame outside a message") }
        case .close, .ping, .pong:
            guard frameIsFinal && length <= 125 else {
                return fail(.protocolError, "a control frame over 125 bytes or fragmented")
            }
            control.removeAll()
            return true
        }
        guard length <= maxMessageBytes - message.count else {
            return fail(.messageTooBig, "a message over \(maxMessageBytes) bytes (max_line_bytes)")
        }
        return true
    }

    /// A piece of the current frame's payload: unmasked into the message or the control frame.
    private func readPayload(_ piece: UnsafeRawBufferPointer) {
        guard !piece.isEmpty else { return }
        frameRemaining -= piece.count
        let phase = frameOffset
        frameOffset += piece.count
        if frameOpcode.isControl {
            _ = control.append(unmasking: piece, key: maskKey, phase: phase)
            return
        }
        let start = message.count
        if isCompressed {
            _ = message.append(unmasking: piece, key: maskKey, phase: phase)
            return
        }
        // ASCII after a whole character needs no more checking.
        guard !message.append(unmasking: piece, key: maskKey, phase: phase) || !utf8.isComplete else { return }
        if !utf8.validate(UnsafeRawBufferPointer(rebasing: message.bytes[start...])) {
            fail(.invalidPayload, "a text message that is not UTF-8")
        }
    }

    /// The current frame's payload is complete.
    private func endFrame() {
        isInPayload = false
        guard !isFinished else { return }
        switch frameOpcode {
        case .ping:
            delegate?.frameReader(self, didReadPing: control.bytes)
        case .close:
            readClose()
        case .pong, .binary:
            break
        case .text, .continuation:
            guard frameIsFinal else { return }
            endMessage()
        }
    }

    private func endMessage() {
        isInMessage = false
        if isCompressed { return endCompressedMessage() }
        guard utf8.isComplete else {
            fail(.invalidPayload, "a text message that ends inside a UTF-8 character")
            return
        }
        utf8 = UTF8Validator()
        delegate?.frameReader(self, didReadText: message.bytes)
        message.removeAll()
    }

    /// A compressed message is complete: inflated within the limit, checked, handed over.
    private func endCompressedMessage() {
        isCompressed = false
        defer {
            message.removeAll()
            inflated.removeAll()
        }
        switch inflater?.inflate(message.bytes, into: inflated, limit: maxMessageBytes) {
        case .inflated:
            break
        case .tooBig:
            fail(.messageTooBig, "a message that inflates past \(maxMessageBytes) bytes (max_line_bytes)")
            return
        case .corrupt, nil:
            fail(.protocolError, "a compressed message that does not inflate")
            return
        }
        var utf8 = UTF8Validator()
        guard utf8.validate(inflated.bytes), utf8.isComplete else {
            fail(.invalidPayload, "a text message that is not UTF-8")
            return
        }
        delegate?.frameReader(self, didReadText: inflated.bytes)
    }

    /// A close frame: empty, or a sendable code and a UTF-8 reason.
    private func readClose() {
        let control = self.control.bytes
        guard !control.isEmpty else {
            isFinished = true
            delegate?.frameReader(self, didReadClose: nil)
            return
        }
        guard control.count >= 2 else {
            fail(.protocolError, "a close frame's payload is a 2-byte code and a reason")
            return
        }
        let code = WebSocketCloseCode(UInt16(control[0]) << 8 | UInt16(control[1]))
        guard code.isSendable else {
            fail(.protocolError, "close code \(code) may not be sent")
            return
        }
        var reason = UTF8Validator()
        let isText = reason.validate(UnsafeRawBufferPointer(rebasing: control[2...])) && reason.isComplete
        guard isText else {
            fail(.invalidPayload, "a close reason that is not UTF-8")
            return
        }
        isFinished = true
        delegate?.frameReader(self, didReadClose: code)
    }

    @discardableResult
    private func fail(_ code: WebSocketCloseCode, _ reason: String) -> Bool {
        isFinished = true
        held = []
        delegate?.frameReader(self, didFail: code, reason: reason)
        return false
    }
}
