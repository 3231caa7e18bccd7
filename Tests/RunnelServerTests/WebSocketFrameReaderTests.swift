import RunnelWebSocket
import Testing

@testable import RunnelHTTP
@testable import RunnelServer

/// A client's WebSocket frames read into messages, and each way of breaking the protocol
/// answered with the close code docs/protocol.md names. Frames are built here as a client
/// builds them (masked), with the exceptions a test needs.
@Suite struct WebSocketFrameReaderTests {
    private final class Recorder: WebSocketFrameReaderDelegate {
        enum Event: Equatable {
            case text(String)
            case ping([UInt8])
            case close(UInt16?)
            case failure(UInt16)
        }
        var events: [Event] = []
        var pausesAfterText = false

        func frameReader(_ reader: WebSocketFrameReader, didReadText message: UnsafeRawBufferPointer) {
            events.append(.text(String(decoding: message, as: UTF8.self)))
            if pausesAfterText { reader.pause() }
        }
        func frameReader(_ reader: WebSocketFrameReader, didReadPing payload: UnsafeRawBufferPointer) {
            events.append(.ping(Array(payload)))
        }
        func frameReader(_ reader: WebSocketFrameReader, didReadClose code: WebSocketCloseCode?) {
            events.append(.close(code?.rawValue))
        }
        func frameReader(_ reader: WebSocketFrameReader, didFail code: WebSocketCloseCode, reason: String) {
            events.append(.failure(code.rawValue))
        }
    }

    /// A client frame: `opcode` with FIN (unless `fin` is false), masked (unless `masked` is
    /// false), the length in its shortest form.
    private func frame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            bytes.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        guard masked else { return bytes + payload }
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    private func text(_ string: String, fin: Bool = true) -> [UInt8] { frame(0x1, Array(string.utf8), fin: fin) }

    private func close(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        frame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
    }

    /// What the reader reports for `bytes`, fed in reads of `piece` bytes (all at once if nil).
    private func read(
        _ bytes: [UInt8], piece: Int? = nil, maxMessageBytes: Int = 1024, pausing: Bool = false
    ) -> [Recorder.Event] {
        let recorder = Recorder()
        recorder.pausesAfterText = pausing
        let reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
        reader.delegate = recorder
        let size = piece ?? max(bytes.count, 1)
        for start in stride(from: 0, to: bytes.count, by: size) {
            bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { reader.read($0) }
        }
        return recorder.events
    }

    @Test func textMessagesAreHandedOverWholeHoweverTheBytesArrive() {
        let stream = text("{\"op\":\"ping\"}") + text("") + text(String(repeating: "a", count: 300))
        let expected: [Recorder.Event] = [
            .text("{\"op\":\"ping\"}"), .text(""), .text(String(repeating: "a", count: 300)),
        ]
        #expect(read(stream) == expected)
        #expect(read(stream, piece: 1) == expected)
        #expect(read(stream, piece: 7) == expected)
    }

    @Test func fragmentsArePutTogetherWithControlFramesBetweenThem() {
        let stream =
            text("{\"op\":", fin: false) + frame(0x9, [1, 2]) + frame(0x0, Array("\"pi".utf8), fin: false)
            + frame(0xA, []) + frame(0x0, Array("ng\"}".utf8))
        let expected: [Recorder.Event] = [.ping([1, 2]), .text("{\"op\":\"ping\"}")]
        #expect(read(stream) == expected)
        #expect(read(stream, piece: 3) == expected)
    }

    @Test func longMessagesInManyReadsArePutTogether() {
        let long = String(repeating: "é", count: 10_000)
        #expect(read(text(long), maxMessageBytes: 1 << 20) == [.text(long)])
        #expect(read(text(long), piece: 1000, maxMessageBytes: 1 << 20) == [.text(long)])
    }

    @Test func aPausedReaderKeepsTheRestUntilResumed() {
        let recorder = Recorder()
        recorder.pausesAfterText = true
        let reader = WebSocketFrameReader(maxMessageBytes: 1024)
        reader.delegate = recorder
        (text("a") + text("b") + text("c")).withUnsafeBytes { reader.read($0) }
        #expect(recorder.events == [.text("a")])
        text("d").withUnsafeBytes { reader.read($0) }
        #expect(recorder.events == [.text("a")])
        reader.resume()
        #expect(recorder.events == [.text("a"), .text("b")])
        while reader.isPaused { reader.resume() }
        #expect(recorder.events == [.text("a"), .text("b"), .text("c"), .text("d")])
    }

    @Test func theClientsCloseIsReportedWithItsCode() {
        #expect(read(close(1000, Array("bye".utf8)) + text("ignored")) == [.close(1000)])
        #expect(read(frame(0x8, [])) == [.close(nil)])
        #expect(read(close(4999)) == [.close(4999)])
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1012, 1015, 1016, 1100, 2000, 2999, 5000] as [UInt16])
    func closeCodesThatMayNotBeSentAreProtocolErrors(code: UInt16) {
        #expect(read(close(code)) == [.failure(1002)])
    }

    @Test func protocolViolationsCloseWith1002() {
        let violations: [[UInt8]] = [
            frame(0x1, Array("x".utf8), masked: false),
            frame(0x1, Array("x".utf8), rsv: 4),
            frame(0x3, []),
            frame(0xB, []),
            frame(0x0, Array("x".utf8)),
            text("a", fin: false) + text("b"),
            frame(0x9, [UInt8](repeating: 0, count: 126)),
            frame(0x9, [], fin: false),
            frame(0x8, [3]),
            // A 16-bit length that would fit in 7 bits.
            [0x81, 0x80 | 126, 0, 5, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 5),
        ]
        for stream in violations {
            #expect(read(stream) == [.failure(1002)], "\(stream.prefix(8))")
        }
    }

    @Test func binaryMessagesCloseWith1003() {
        #expect(read(text("ok") + frame(0x2, [0, 1])) == [.text("ok"), .failure(1003)])
    }

    @Test func invalidUTF8ClosesWith1007() {
        #expect(read(frame(0x1, [0x61, 0xC0, 0x80])) == [.failure(1007)])
        // A message that ends inside a character, and one broken across fragments.
        #expect(read(frame(0x1, [0xE2, 0x82])) == [.failure(1007)])
        #expect(read(frame(0x1, [0xE2, 0x82], fin: false) + frame(0x0, [0x41])) == [.failure(1007)])
        #expect(read(frame(0x1, [0xE2, 0x82], fin: false) + frame(0x0, [0xAC])) == [.text("€")])
        #expect(read(close(1000, [0xFF])) == [.failure(1007)])
    }

    @Test func messagesOverTheLimitCloseWith1009() {
        #expect(read(text(String(repeating: "a", count: 17)), maxMessageBytes: 16) == [.failure(1009)])
        #expect(
            read(text(String(repeating: "a", count: 16)), maxMessageBytes: 16) == [
                .text(String(repeating: "a", count: 16))
            ])
        let fragments =
            text(String(repeating: "a", count: 10), fin: false) + frame(0x0, [UInt8](repeating: 0x61, count: 10))
        #expect(read(fragments, maxMessageBytes: 16) == [.failure(1009)])
    }

    @Test func nothingIsReadAfterAFailure() {
        #expect(read(frame(0x2, []) + text("after")) == [.failure(1003)])
    }
}

/// UTF-8 as RFC 3629 defines it, checked piece by piece.
@Suite struct UTF8ValidatorTests {
    private func isValid(_ bytes: [UInt8], piece: Int? = nil) -> Bool {
        var validator = UTF8Validator()
        let size = piece ?? max(bytes.count, 1)
        for start in stride(from: 0, to: bytes.count, by: size) {
            let ok = bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { validator.validate($0) }
            if !ok { return false }
        }
        return validator.isComplete
    }

    @Test func validTextIsAccepted() {
        for text in [
            "", "plain ascii, longer than eight bytes", "κόσμε", "€", "𝄞", "\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}",
        ] {
            #expect(isValid(Array(text.utf8)), "\(text)")
            #expect(isValid(Array(text.utf8), piece: 1), "\(text)")
        }
    }

    @Test func whatIsNotUTF8IsRefused() {
        let invalid: [[UInt8]] = [
            [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF],  // lone continuation, overlong 2-byte
            [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // surrogates
            [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],  // overlong, > U+10FFFF
            [0xFE], [0xFF], [0xC2], [0xE2, 0x82], [0xC2, 0x41],  // bytes never used, truncated
            Array("abcdefgh".utf8) + [0xC0] + Array("abcdefgh".utf8),
        ]
        for bytes in invalid {
            #expect(!isValid(bytes), "\(bytes)")
            #expect(!isValid(bytes, piece: 1), "\(bytes)")
        }
    }
}

/// The opening handshake's accept value and the heads of the frames the server sends.
@Suite struct WebSocketHandshakeTests {
    @Test func theAcceptValueIsRFC6455sExample() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test(
        arguments: [
            (0, [0x81, 0]), (125, [0x81, 125]), (126, [0x81, 126, 0, 126]), (65535, [0x81, 126, 255, 255]),
            (65536, [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]),
        ] as [(Int, [UInt8])])
    func frameHeadsUseTheShortestLength(length: Int, head: [UInt8]) {
        #expect(WebSocketFrameHead.withHead(.text, length: length) { Array($0) } == head)
    }
}
