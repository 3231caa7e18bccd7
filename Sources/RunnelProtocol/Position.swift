/// Where a value stands in its subject (docs/protocol.md, "Positions and resume"): the
/// subject's epoch and the value's seq, written `EPOCH:SEQ`. Seqs count the values published
/// into a subject from 1; a behavior's initial value, which nobody published, has seq 0.
/// Immutable.
package struct Position: Equatable, Sendable, CustomStringConvertible {
    package let epoch: String
    package let seq: UInt64

    package init(epoch: String, seq: UInt64) {
        self.epoch = epoch
        self.seq = seq
    }

    /// `text` as `EPOCH:SEQ`, or nil: an epoch of 1 to 32 bytes from `[A-Za-z0-9_-]`, a colon,
    /// and a seq in plain decimal digits.
    package init?(parsing text: String) {
        let bytes = Array(text.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let epochBytes = bytes[..<colon]
        let digits = bytes[(colon + 1)...]
        guard Epoch.isValid(epochBytes), !digits.isEmpty, digits.count <= 20,
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let seq = UInt64(String(decoding: digits, as: UTF8.self))
        else { return nil }
        self.init(epoch: String(decoding: epochBytes, as: UTF8.self), seq: seq)
    }

    package var description: String { "\(epoch):\(seq)" }
}

/// A subject's epoch: an opaque string that changes whenever the server cannot vouch that no
/// value it delivered under the old one was lost. Pure functions, any thread.
package enum Epoch {
    /// The length of the epochs the server makes: 16 characters, 96 random bits.
    package static let length = 16
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A new random epoch.
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` is a valid epoch: 1 to 32 bytes from `[A-Za-z0-9_-]`.
    package static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        (1...32).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            }
    }
}
