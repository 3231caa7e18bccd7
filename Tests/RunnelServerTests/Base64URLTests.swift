import RunnelCrypto
import Testing

@testable import RunnelServer

/// The strict base64url decoder of JWT parts and JWK members.
@Suite struct Base64URLTests {
    static func decode(_ text: String) -> [UInt8]? { Base64URL.decode(Substring(text).utf8) }

    @Test func decodesEveryLengthWithoutPadding() {
        #expect(Self.decode("") == [])
        #expect(Self.decode("QQ") == Array("A".utf8))
        #expect(Self.decode("QUI") == Array("AB".utf8))
        #expect(Self.decode("QUJD") == Array("ABC".utf8))
        #expect(Self.decode("-_8") == [0xFB, 0xFF])
    }

    @Test func refusesWhatIsNotStrictBase64URL() {
        for text in ["Q", "QQ==", "QUJ=", "a+b", "a/b", "QU JD", "\u{e9}A"] {
            #expect(Self.decode(text) == nil, "\(text)")
        }
        // Unused bits of the last character set: another spelling of the same bytes.
        #expect(Self.decode("QR") == nil && Self.decode("QUK") == nil)
    }
}
