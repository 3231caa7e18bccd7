import FuzzSupport
import RunnelWebSocket

// What the WebSocket targets share: a `WebSocketFrameReader`'s events over a client's byte
// stream, with the properties every event must have checked as it comes.

/// What a reader reported, in order.
public enum WebSocketEvent: Equatable, CustomStringConvertible {
    case text([UInt8])
    case ping([UInt8])
    case close(UInt16?)
    case failure(UInt16)

    public var description: String {
        switch self {
        case .text(let bytes): "text(\(bytes.count) bytes)"
        case .ping(let bytes): "ping(\(bytes.count) bytes)"
        case .close(let code): "close(\(code.map(String.init) ?? "none"))"
        case .failure(let code): "failure(\(code))"
        }
    }
}

/// Records a reader's events, checking each: a text message is UTF-8 and within the limit, a
/// ping's payload at most 125 bytes, a peer's close code one that may be sent, a failure 1002,
/// 1003, 1007 or 1009 with a reason that fits a close frame, nothing after a close or failure.
/// Pauses the reader after each message when `pausesAfterMessages`.
///
/// Thread rules: the fuzz target's one thread. Lifetime rule: held by `readEvents` while the
/// reader it records lives.
private final class Recorder: WebSocketFrameReaderDelegate {
    var events: [WebSocketEvent] = []
    let pausesAfterMessages: Bool

    init(pausesAfterMessages: Bool) { self.pausesAfterMessages = pausesAfterMessages }

    private func record(_ event: WebSocketEvent) {
        switch events.last {
        case .close, .failure: require(false, "\(event) after \(events.last!)")
        default: events.append(event)
        }
    }

    func frameReader(_ reader: WebSocketFrameReader, didReadText message: UnsafeRawBufferPointer) {
        let bytes = Array(message)
        require(bytes.count <= reader.maxMessageBytes, "a message of \(bytes.count) over \(reader.maxMessageBytes)")
        require(Array(String(decoding: bytes, as: UTF8.self).utf8) == bytes, "a text message that is not UTF-8")
        record(.text(bytes))
        if pausesAfterMessages { reader.pause() }
    }

    func frameReader(_ reader: WebSocketFrameReader, didReadPing payload: UnsafeRawBufferPointer) {
        require(payload.count <= 125, "a ping of \(payload.count) bytes")
        record(.ping(Array(payload)))
    }

    func frameReader(_ reader: WebSocketFrameReader, didReadClose code: WebSocketCloseCode?) {
        require(code?.isSendable ?? true, "close code \(code!) accepted")
        record(.close(code?.rawValue))
    }

    func frameReader(_ reader: WebSocketFrameReader, didFail code: WebSocketCloseCode, reason: String) {
        require([1002, 1003, 1007, 1009].contains(code.rawValue), "failure with close code \(code)")
        require(reason.utf8.count <= 123, "a reason too long for a close frame")
        record(.failure(code.rawValue))
    }
}

/// The events `reader` reports for `input` fed in reads of `piece` bytes, paused after each
/// message and resumed after each read when `pausing`.
public func readEvents(
    _ input: UnsafeRawBufferPointer, piece: Int, pausing: Bool, reader: WebSocketFrameReader
) -> [WebSocketEvent] {
    let recorder = Recorder(pausesAfterMessages: pausing)
    reader.delegate = recorder
    var offset = 0
    while offset < input.count {
        let chunk = UnsafeRawBufferPointer(rebasing: input[offset..<min(input.count, offset + piece)])
        offset += chunk.count
        reader.read(chunk)
        while reader.isPaused { reader.resume() }
    }
    return recorder.events
}
