import RunnelCompression
import RunnelWebSocket
import Testing

@testable import RunnelServer

/// permessage-deflate (RFC 7692): the `Sec-WebSocket-Extensions` grammar, which offers are
/// accepted and with what answer, and zlib's round trips through the server's deflaters and
/// its inflater, the bound on an inflated message included.
@Suite struct PerMessageDeflateTests {
    private typealias Agreement = PerMessageDeflateAgreement

    @Test func theHeaderGrammarReadsSeveralOffersParametersAndQuotedValues() throws {
        let offers = try #require(
            ExtensionHeaderParser.parse(
                #"permessage-deflate; client_max_window_bits, permessage-deflate ;server_max_window_bits="10" , x-foo"#)
        )
        #expect(offers.map(\.name) == ["permessage-deflate", "permessage-deflate", "x-foo"])
        #expect(offers[0].parameters.map(\.name) == ["client_max_window_bits"])
        #expect(offers[0].parameters[0].value == nil)
        #expect(offers[1].parameters[0].name == "server_max_window_bits" && offers[1].parameters[0].value == "10")
        #expect(offers[2].parameters.isEmpty)
        #expect(ExtensionHeaderParser.parse("") == [])
        #expect(ExtensionHeaderParser.parse(" , permessage-deflate,") != nil)
    }

    @Test(arguments: [
        "permessage-deflate;", "permessage-deflate; a=", "permessage-deflate; a=\"b", "permessage-deflate; a=\"b c\"",
        "permessage-deflate a", "permessage-deflate; =1", ";x", "permessage-deflate; a=b=c",
    ])
    func malformedHeadersDoNotParse(_ value: String) {
        #expect(ExtensionHeaderParser.parse(value) == nil)
    }

    @Test func anOfferWithoutParametersGetsDefaults() throws {
        let agreement = try #require(Agreement.negotiate(["permessage-deflate"]))
        #expect(agreement == Agreement())
        #expect(agreement.responseValue == "permessage-deflate")
    }

    @Test func theAnswerNamesTheParametersTheClientAskedFor() throws {
        let agreement = try #require(
            Agreement.negotiate([
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                    + "server_max_window_bits=10; client_max_window_bits=9"
            ]))
        #expect(agreement.serverNoContextTakeover && agreement.clientNoContextTakeover)
        #expect(agreement.serverMaxWindowBits == 10)
        #expect(
            agreement.responseValue
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10"
        )
        let quoted = try #require(Agreement.negotiate([#"permessage-deflate; server_max_window_bits="12""#]))
        #expect(quoted.serverMaxWindowBits == 12)
        let bare = try #require(Agreement.negotiate(["permessage-deflate; client_max_window_bits"]))
        #expect(bare.responseValue == "permessage-deflate")
    }

    @Test(arguments: [
        "permessage-deflate; server_max_window_bits", "permessage-deflate; server_max_window_bits=8",
        "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; client_max_window_bits=7", "permessage-deflate; client_max_window_bits=abc",
        "permessage-deflate; server_no_context_takeover=1", "permessage-deflate; client_no_context_takeover=yes",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; unknown_parameter", "x-webkit-deflate-frame", "permessage-deflate; a=\"b",
    ])
    func invalidOrUnsupportedOffersAreDeclined(_ value: String) {
        #expect(Agreement.negotiate([value]) == nil)
    }

    @Test func theFirstAcceptableOfferWinsAcrossFields() throws {
        let agreement = try #require(
            Agreement.negotiate([
                "x-foo, permessage-deflate; server_max_window_bits=8",
                "PERMESSAGE-DEFLATE; Server_No_Context_Takeover, permessage-deflate",
            ]))
        #expect(agreement.serverNoContextTakeover)
        #expect(Agreement.negotiate([]) == nil)
    }

    private func inflate(_ inflater: WebSocketInflater, _ bytes: [UInt8], limit: Int = 1 << 20) -> (
        WebSocketInflater.Outcome, [UInt8]
    ) {
        let output = GrowableBuffer()
        let outcome = bytes.withUnsafeBytes { inflater.inflate($0, into: output, limit: limit) }
        return (outcome, Array(output.bytes))
    }

    /// A message as RFC 7692's sender sends it: blocks ended by a sync flush, without its last
    /// four bytes, `00 00 ff ff`.
    private static func message(_ flushed: UnsafeRawBufferPointer) -> [UInt8] {
        #expect(Array(flushed.suffix(4)) == [0x00, 0x00, 0xFF, 0xFF])
        return Array(flushed.dropLast(4))
    }

    @Test(arguments: [true, false])
    func messagesRoundTripWithAndWithoutContextTakeover(_ takeover: Bool) {
        let deflater = Deflater(windowBits: 15, takesOverContext: takeover)
        let inflater = WebSocketInflater(resetsEachMessage: !takeover)
        let line = Array(#"{"ev":"next","sid":"a","value":{"host":"web-1","load":0.97}}"#.utf8)
        var sizes: [Int] = []
        for _ in 0..<3 {
            let compressed = line.withUnsafeBytes { Self.message(deflater.compressFlushed($0)) }
            sizes.append(compressed.count)
            let (outcome, plain) = inflate(inflater, compressed)
            #expect(outcome == .inflated && plain == line)
        }
        // With takeover, a repeated message is a back reference into the last one.
        #expect(takeover ? sizes[1] < sizes[0] : sizes[1] == sizes[0])
    }

    /// RFC 7692 7.2.3.3: "Hello" ending in a final block (BFINAL), and 7.2.3.1's sync-flushed
    /// "Hello", in turns on one window: a final block ends its stream, and the next message
    /// starts a new one (WebSocketInflateFuzzer found the next message refused with 1002).
    @Test(arguments: [true, false])
    func aMessageEndingInAFinalBlockIsFollowedByMoreMessages(_ resets: Bool) {
        let inflater = WebSocketInflater(resetsEachMessage: resets)
        let final: [UInt8] = [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
        let flushed: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
        for message in [final, final, flushed, final, flushed] {
            let (outcome, plain) = inflate(inflater, message)
            #expect(outcome == .inflated && plain == Array("Hello".utf8))
        }
    }

    @Test func aSharedValueIsCompressedOnceAndEachSubscribersMessageInflates() {
        let shared = WebSocketSharedDeflate(values: SharedValueDeflate())
        let inflater = WebSocketInflater(resetsEachMessage: false)
        let value = Array(String(repeating: #"{"metric":"cpu","value":0.5},"#, count: 40).utf8)
        for sid in ["a", "bb", String(repeating: "c", count: 70_000)] {
            let head = Array(#"{"ev":"next","sid":"\#(sid)","value":"#.utf8)
            let tail = Array(#","pos":"e:1"}"#.utf8)
            let message = head.withUnsafeBytes { head in
                value.withUnsafeBytes { value in
                    tail.withUnsafeBytes {
                        Self.message(shared.compressNext(head: head, value: value, tail: $0, windowBits: 15))
                    }
                }
            }
            let (outcome, plain) = inflate(inflater, message)
            #expect(outcome == .inflated && plain == head + value + tail)
        }
    }

    @Test func aDecompressionBombStopsOneBytePastTheLimit() {
        let deflater = Deflater(windowBits: 15, takesOverContext: false)
        let zeros = [UInt8](repeating: 0x20, count: 4 << 20)
        let bomb = zeros.withUnsafeBytes { Self.message(deflater.compressFlushed($0)) }
        #expect(bomb.count < 8 * 1024)
        let (outcome, plain) = inflate(WebSocketInflater(resetsEachMessage: false), bomb, limit: 1000)
        #expect(outcome == .tooBig)
        #expect(plain.count == 1001)
        let (garbage, _) = inflate(WebSocketInflater(resetsEachMessage: false), [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(garbage == .corrupt)
    }
}
