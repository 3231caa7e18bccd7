import CLibCrypto
import RunnelServer

/// The server's side of the opening handshake (RFC 6455, 4.2): which upgrade requests are
/// WebSocket requests it takes, and the `Sec-WebSocket-Accept` value that proves it read the
/// client's key (SHA-1 and Base64 from OpenSSL's libcrypto). Stateless.
enum WebSocketHandshake {
    /// The one version of the protocol there is (RFC 6455).
    static let version = "13"
    private static let keyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The client's key, when `head` asks for a WebSocket as RFC 6455 says; else the failure
    /// that answers it: `426` without the upgrade or with another version (its answer names
    /// the version spoken), `400` without a well-formed key.
    static func key(of head: HTTPRequestHead) throws(HTTPFailure) -> String {
        guard head.isUpgrade, head.field("upgrade", hasToken: "websocket"),
            head.field("connection", hasToken: "upgrade")
        else {
            throw HTTPFailure(.badRequest, "/ws takes WebSocket upgrade requests only", status: .upgradeRequired)
        }
        guard head.field("sec-websocket-version") == version else {
            throw HTTPFailure(
                .badRequest, "Sec-WebSocket-Version must be \(version)", status: .upgradeRequired)
        }
        guard let key = head.field("sec-websocket-key"), isWellFormedKey(key) else {
            throw HTTPFailure(.badRequest, "Sec-WebSocket-Key must be 16 bytes in Base64")
        }
        return key
    }

    /// `Sec-WebSocket-Accept` for `key`: Base64 of the SHA-1 of the key and the protocol's GUID.
    static func acceptValue(forKey key: String) -> String {
        var input = Array(key.utf8)
        input.append(contentsOf: keyGUID.utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        let digested = EVP_Digest(input, input.count, &digest, &digestLength, EVP_sha1(), nil)
        precondition(digested == 1 && digestLength == 20, "libcrypto's SHA-1 failed")
        // Base64 of 20 bytes is 28 characters; EVP_EncodeBlock adds a NUL.
        var encoded = [UInt8](repeating: 0, count: 29)
        let count = EVP_EncodeBlock(&encoded, digest, 20)
        return String(decoding: encoded[..<Int(count)], as: UTF8.self)
    }

    /// 16 bytes in Base64: 22 characters of the alphabet and `==`.
    private static func isWellFormedKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                return true
            default:
                return false
            }
        }
    }
}
