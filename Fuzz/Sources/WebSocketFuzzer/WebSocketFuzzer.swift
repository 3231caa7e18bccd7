import FuzzSupport
import RunnelWebSocket
import WebSocketFuzzSupport

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
// close or a failure (`WebSocketFuzzSupport`'s checks).

private func run(_ input: UnsafeRawBufferPointer, piece: Int, maxMessageBytes: Int, pausing: Bool) -> [WebSocketEvent] {
    readEvents(input, piece: piece, pausing: pausing, reader: WebSocketFrameReader(maxMessageBytes: maxMessageBytes))
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
