import FuzzSupport
import RunnelServer

// The WebSocket frame reader: `WebSocketFrameReader` (wslay's frame layer and the message
// rules of docs/protocol.md) over a client's byte stream.
//
// The first byte chooses how the rest is cut into reads (whole, or 1 to 63 bytes), the
// message limit (64 KiB, or 0 to 127 bytes, so short inputs reach it), and whether the
// reader is paused after each message and resumed after the read (as a session that stops
// taking requests does). Checked: fed whole and fed in pieces, with or without pauses, the
// reader reports the same events and ends the same way; every text message is UTF-8 and
// within the limit; a ping's payload is at most 125 bytes; a peer's close code is one that
// may be sent; a failure closes with 1002, 1003, 1007 or 1009; nothing is reported after a
// close or a failure.

private final class Recorder: WebSocketFrameReaderDelegate {
    enum Event: Equatable {
        case text([UInt8])
        case ping([UInt8])
        case close(UInt16?)
        case failure(UInt16)
    }
    var events: [Event] = []
    let pausesAfterMessages: Bool

    init(pausesAfterMessages: Bool) { self.pausesAfterMessages = pausesAfterMessages }

    private func record(_ event: Event) {
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

private func run(_ input: UnsafeRawBufferPointer, piece: Int, maxMessageBytes: Int, pausing: Bool) -> [Recorder.Event] {
    let recorder = Recorder(pausesAfterMessages: pausing)
    let reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
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

@_cdecl("LLVMFuzzerTestOneInput")
public func webSocketFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let control = data[0]
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let piece = control & 0x3F == 0 ? input.count : Int(control & 0x3F)
    let maxMessageBytes = control & 0x80 == 0 ? 64 * 1024 : Int(data[size - 1] & 0x7F)
    let pausing = control & 0x40 != 0
    let whole = run(input, piece: input.count, maxMessageBytes: maxMessageBytes, pausing: false)
    let cut = run(input, piece: piece, maxMessageBytes: maxMessageBytes, pausing: pausing)
    require(whole == cut, "cutting into \(piece)-byte reads (pausing: \(pausing)) changed the events")
    return 0
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("WebSocketFuzzer_main")
public func webSocketFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in webSocketFuzzerTestOneInput(data!, size) }
}
