import CFuzzZlib
import FuzzSupport
import RunnelWebSocket
import WebSocketFuzzSupport

// The WebSocket frame reader with permessage-deflate agreed (RFC 7692): RSV1 frames inflated
// by `WebSocketInflater`, the client's window kept between messages or reset after each.
//
// The first byte chooses raw or built input (bit 7), client_no_context_takeover (bit 6),
// pausing after each message (bit 5) and how the stream is cut into reads (bits 0-4: whole,
// or 1 to 31 bytes); the second the message limit (64 KiB, or 0 to 2032 bytes so short inputs
// reach it). Raw: the rest is a client's byte stream, frames with RSV1 and random compressed
// payloads. Built: the third byte chooses the client's window (9 to 15 bits) and level (0 to
// 9); then each message is a flag byte, a length byte and that many bytes of text. The flags:
// compressed (bit 0), in two fragments (bit 1) with a ping between them (bit 7), the text
// repeated 64 times (bit 2) and 16 times (bit 5), ending in a final block rather than a sync
// flush (bit 3), its bytes made ASCII (bit 4). This target compresses as a client does (zlib's
// raw deflate, the sync flush's 00 00 ff ff taken off; the window kept across messages unless
// client_no_context_takeover, a new stream after a final block), frames, masks, and ends the
// stream with a close frame. Checked: fed whole and cut (and paused), the reader reports the same events
// (`WebSocketFuzzSupport` checks each); built, they are exactly the texts compressed, in order,
// or end at the first message that may not pass: 1009 when its text or compressed frames are
// over the limit, 1007 when its text is not UTF-8.

/// The fuzzing client's side of permessage-deflate: zlib's raw deflate.
///
/// Thread rules: the fuzz target's one thread. Lifetime rule: owns its zlib stream, ended in
/// `deinit`.
private final class ClientDeflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let takesOverContext: Bool

    init(windowBits: Int32, level: Int32, takesOverContext: Bool) {
        self.takesOverContext = takesOverContext
        stream.initialize(to: z_stream())
        require(fuzz_deflate_init(stream, level, windowBits) == Z_OK, "deflateInit2 failed")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// A message's payload: `text` deflated and sync-flushed without the flush's 00 00 ff ff,
    /// or ending in a final block when `final` (a new stream follows, as the reader's does).
    func compress(_ text: [UInt8], final: Bool) -> [UInt8] {
        // zlib makes no second sync flush without input between (Z_BUF_ERROR): an empty
        // message is an empty stored block's first byte, as RFC 7692 7.2.3.6 shows.
        if text.isEmpty && !final {
            if !takesOverContext { deflateReset(stream) }
            return [0x00]
        }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, UInt(text.count))) + 64)
        var input = text
        let produced = input.withUnsafeMutableBufferPointer { input in
            output.withUnsafeMutableBufferPointer { space in
                stream.pointee.next_in = input.baseAddress
                stream.pointee.avail_in = UInt32(input.count)
                stream.pointee.next_out = space.baseAddress
                stream.pointee.avail_out = UInt32(space.count)
                let result = deflate(stream, final ? Z_FINISH : Z_SYNC_FLUSH)
                require(result == (final ? Z_STREAM_END : Z_OK), "deflate returned \(result)")
                return space.count - Int(stream.pointee.avail_out)
            }
        }
        output.removeLast(output.count - produced)
        if final || !takesOverContext { deflateReset(stream) }
        if !final {
            require(output.suffix(4) == [0, 0, 0xFF, 0xFF], "a sync flush without its empty stored block")
            output.removeLast(4)
        }
        return output
    }
}

/// One frame from the client: masked, its length in the shortest form.
private func frame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, rsv1: Bool = false) -> [UInt8] {
    var bytes: [UInt8] = [(final ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
    if payload.count < 126 {
        bytes.append(0x80 | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        bytes.append(0x80 | 127)
        bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
    }
    let key: [UInt8] = [0x5A, UInt8(truncatingIfNeeded: payload.count), 0xA5, opcode]
    bytes += key
    bytes += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    return bytes
}

/// What a built input must give: the events of the messages before the first that may not
/// pass, then that message's ping (it may come before the failure) and the failures allowed.
private struct Expectation {
    var events: [WebSocketEvent] = []
    var pingBeforeFailure: WebSocketEvent?
    var failures: Set<UInt16> = []

    func check(_ actual: [WebSocketEvent]) {
        guard !failures.isEmpty else {
            return require(actual == events, "events \(actual), expected \(events)")
        }
        var rest = actual[...]
        require(rest.starts(with: events), "events \(actual), expected \(events) before a failure")
        rest = rest.dropFirst(events.count)
        if let ping = pingBeforeFailure, rest.first == ping { rest = rest.dropFirst() }
        guard rest.count == 1, case .failure(let code) = rest.first!, failures.contains(code) else {
            return require(false, "events \(actual), expected \(events) then a failure in \(failures.sorted())")
        }
    }
}

/// The stream of frames a built input describes, and what the reader must report of it.
private func build(_ input: UnsafeRawBufferPointer, limit: Int, clientNoContextTakeover: Bool) -> (
    [UInt8], Expectation
) {
    var bytes: [UInt8] = []
    var expectation = Expectation()
    guard let settings = input.first else { return (bytes, expectation) }
    let deflater = ClientDeflater(
        windowBits: Int32(min(9 + settings & 7, 15)), level: Int32(settings >> 3) % 10,
        takesOverContext: !clientNoContextTakeover)
    var offset = 1
    while offset + 1 < input.count && expectation.failures.isEmpty {
        let flags = input[offset]
        let length = min(Int(input[offset + 1]), input.count - offset - 2)
        var piece = Array(input[(offset + 2)..<(offset + 2 + length)])
        offset += 2 + length
        if flags & 0x10 != 0 { piece = piece.map { $0 & 0x7F } }
        let repeats = (flags & 0x04 != 0 ? 64 : 1) * (flags & 0x20 != 0 ? 16 : 1)
        let text = Array([[UInt8]](repeating: piece, count: repeats).joined())
        let compressed = flags & 0x01 != 0
        let payload = compressed ? deflater.compress(text, final: flags & 0x08 != 0) : text
        let ping: [UInt8] = [flags]
        expectation.pingBeforeFailure = nil
        if flags & 0x02 != 0 {
            let half = payload.count / 2
            bytes += frame(1, Array(payload[..<half]), final: false, rsv1: compressed)
            if flags & 0x80 != 0 {
                bytes += frame(9, ping)
                expectation.pingBeforeFailure = .ping(ping)
            }
            bytes += frame(0, Array(payload[half...]))
        } else {
            bytes += frame(1, payload, rsv1: compressed)
        }
        let isText = Array(String(decoding: text, as: UTF8.self).utf8) == text
        if text.count > limit || payload.count > limit {
            expectation.failures.insert(1009)
            // Plain text is checked as it comes: a bad character may be found first.
            if !compressed && !isText { expectation.failures.insert(1007) }
        } else if !isText {
            expectation.failures.insert(1007)
        } else {
            if let ping = expectation.pingBeforeFailure { expectation.events.append(ping) }
            expectation.events.append(.text(text))
        }
    }
    if expectation.failures.isEmpty {
        bytes += frame(8, [0x03, 0xE8])
        expectation.events.append(.close(1000))
    }
    return (bytes, expectation)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func webSocketInflateFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 2 else { return 0 }
    let control = data[0]
    let limit = data[1] & 0x80 == 0 ? 64 * 1024 : Int(data[1] & 0x7F) * 16
    let clientNoContextTakeover = control & 0x40 != 0
    let pausing = control & 0x20 != 0
    let body = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
    var expectation: Expectation?
    var stream = Array(body)
    if control & 0x80 != 0 {
        let built = build(body, limit: limit, clientNoContextTakeover: clientNoContextTakeover)
        stream = built.0
        expectation = built.1
    }
    let piece = control & 0x1F == 0 ? max(stream.count, 1) : Int(control & 0x1F)
    let reader = { WebSocketFrameReader(maxMessageBytes: limit, clientNoContextTakeover: clientNoContextTakeover) }
    stream.withUnsafeBytes { stream in
        let whole = readEvents(stream, piece: max(stream.count, 1), pausing: false, reader: reader())
        let cut = readEvents(stream, piece: piece, pausing: pausing, reader: reader())
        require(whole == cut, "cutting into \(piece)-byte reads (pausing: \(pausing)) changed the events")
        expectation?.check(whole)
    }
    return 0
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("WebSocketInflateFuzzer_main")
public func webSocketInflateFuzzerMain(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in webSocketInflateFuzzerTestOneInput(data!, size) }
}
