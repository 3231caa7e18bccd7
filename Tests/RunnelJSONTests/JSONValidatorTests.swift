import Testing

@testable import RunnelJSON

@Suite struct JSONValidatorTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "12", "-3.25e+10", "1E-2", "\"\"", "[]", "{}",
        " [1, 2.5, \"x\", null, true, {\"a\": [false]}] ", "\t\r\n{}\n",
        "\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
        "\"caf\u{E9} \u{1F600} \u{7F}\"", "{\"a\":1,\"a\":2}",
    ])
    func accepts(_ text: String) {
        #expect(TestBytes.validate(text) == nil)
    }

    @Test(arguments: [
        ("", JSONError.Reason.unexpectedEnd), ("   ", .unexpectedEnd), ("[1,]", .unexpectedByte),
        ("{\"a\":1,}", .unexpectedByte), ("[,1]", .unexpectedByte), ("01", .trailingData), ("-01", .trailingData),
        ("1.", .invalidNumber), (".5", .unexpectedByte), ("1e", .invalidNumber), ("-", .invalidNumber),
        ("+1", .unexpectedByte), ("NaN", .unexpectedByte), ("Infinity", .unexpectedByte), ("-Infinity", .invalidNumber),
        ("nul", .unexpectedByte), ("truex", .trailingData), ("[1] x", .trailingData), ("{} {}", .trailingData),
        ("\"a\tb\"", .controlCharacter), ("\"\u{0}\"", .controlCharacter), ("\"\\x\"", .invalidEscape),
        ("\"\\u12\"", .invalidEscape), ("\"\\u12G4\"", .invalidEscape), ("\"\\'\"", .invalidEscape),
        ("\"\\ud800\"", .loneSurrogate), ("\"\\udc00\"", .loneSurrogate), ("\"\\ud800\\u0041\"", .loneSurrogate),
        ("\"\\ud800x\"", .loneSurrogate), ("\"\\udc00\\ud800\"", .loneSurrogate), ("\"abc", .unexpectedEnd),
        ("{\"a\" 1}", .unexpectedByte), ("{a:1}", .unexpectedByte), ("{\"a\":}", .unexpectedByte),
        ("[1 2]", .unexpectedByte),
        ("\u{FEFF}{}", .unexpectedByte), ("'a'", .unexpectedByte), ("[", .unexpectedEnd), ("{\"a\":1", .unexpectedEnd),
    ])
    func rejects(_ text: String, _ reason: JSONError.Reason) {
        #expect(TestBytes.validate(text)?.reason == reason, "\(text)")
    }

    /// Byte sequences Unicode's Table 3-7 forbids, inside a string.
    @Test(
        arguments: [
            [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xE0, 0x9F, 0xBF],  // overlong
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // UTF-16 surrogates encoded in UTF-8
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF0, 0x80, 0x80, 0xAF],  // > U+10FFFF, overlong
            [0x80], [0xBF], [0xFF], [0xFE], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98],  // stray or cut short
            [0xC3, 0x41], [0xE2, 0x28, 0xA1],  // bad continuation
        ] as [[UInt8]])
    func rejectsInvalidUTF8(_ sequence: [UInt8]) {
        let bytes = [UInt8(ascii: "\"")] + sequence + [UInt8(ascii: "\"")]
        #expect(TestBytes.validate(bytes)?.reason == .invalidUTF8)
        // Also in a longer string, where the eight-byte fast path runs first.
        let padded =
            [UInt8(ascii: "\"")] + Array("abcdefghijklmnop".utf8) + sequence + Array("qrstuvwxyz".utf8) + [0x22]
        #expect(TestBytes.validate(padded)?.reason == .invalidUTF8)
    }

    @Test(
        arguments: [
            [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],
            [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        ] as [[UInt8]])
    func acceptsBoundaryUTF8(_ sequence: [UInt8]) {
        #expect(TestBytes.validate([0x22] + sequence + [0x22]) == nil)
    }

    /// In a string read sixteen bytes a step (optimised builds) and then eight, each byte that
    /// needs attention stops the scan exactly where it is, at every place in the steps, in a
    /// string of 24 bytes and one of 56, and the bytes around those (0x20, 0x7F, the
    /// neighbours of `"` and `\`) never do.
    @Test func longStringsStopAtTheFirstByteThatNeedsAttentionWherever() throws {
        let expected: [(special: [UInt8], reason: JSONError.Reason, shift: Int)] = [
            ([0x00], .controlCharacter, 0), ([0x1F], .controlCharacter, 0), ([0x80], .invalidUTF8, 0),
            ([0xFF], .invalidUTF8, 0), ([UInt8(ascii: "\\"), UInt8(ascii: "x")], .invalidEscape, 0),
            ([UInt8(ascii: "\"")], .trailingData, 1),
        ]
        for (special, reason, shift) in expected {
            for (length, places) in [(24, 17), (56, 48)] {
                for offset in 0..<places {
                    var content = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    content.replaceSubrange(offset..<(offset + special.count), with: special)
                    let error = TestBytes.validate([0x22] + content + [0x22])
                    #expect(error == JSONError(reason, at: 1 + offset + shift), "\(special) at \(offset) of \(length)")
                }
            }
        }
        #expect(TestBytes.validate([0x22] + [UInt8](repeating: 0x7F, count: 40) + [0x22]) == nil)
        #expect(TestBytes.validate([0x22] + [UInt8](repeating: 0x20, count: 40) + [0x22]) == nil)
        let plain: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, UInt8(ascii: "a")]
        let long = (0..<100).map { plain[$0 % plain.count] }
        let text = TestBytes.text(long)
        #expect(try JSONParser(maxDepth: 4).parse("\"\(text)\"") == .string(text))
        // Escapes and multi-byte sequences across every place of the steps are read whole.
        for offset in 0..<40 {
            let content = String(repeating: "a", count: offset) + "é\\n€😀" + String(repeating: "b", count: 40)
            #expect(
                try JSONParser(maxDepth: 4).parse("\"\(content)\"")
                    == .string(String(repeating: "a", count: offset) + "é\n€😀" + String(repeating: "b", count: 40)))
        }
    }

    /// The sixteen-byte step (optimised builds) marks exactly the bytes the eight-byte step
    /// does, and finds the first: every byte value in every lane, among plain bytes and after
    /// another marked one. Tested directly: debug builds, which run the tests, scan without it.
    @Test func plainLanesAgreeWithTheEightByteStep() {
        let plain = [UInt8](repeating: UInt8(ascii: "a"), count: 16)
        for byte in UInt8.min...UInt8.max {
            // The eight-byte step's verdict on the byte, among plain bytes.
            let marked = JSONScanner.attentionMarks(in: 0x6161_6161_6161_6100 | UInt64(byte)) != 0
            for lane in 0..<16 {
                var bytes = plain
                bytes[lane] = byte
                let vector = bytes.withUnsafeBytes { $0.loadUnaligned(as: SIMD16<Int8>.self) }
                let marks = JSONScanner.attentionMarks(in: vector)
                #expect(any(marks) == marked, "byte \(byte) in lane \(lane)")
                #expect(JSONScanner.firstMarked(marks) == (marked ? lane : 16), "byte \(byte) in lane \(lane)")
                // A marked byte after it leaves the first where it is.
                if lane < 15 {
                    bytes[15] = UInt8(ascii: "\"")
                    let both = bytes.withUnsafeBytes { $0.loadUnaligned(as: SIMD16<Int8>.self) }
                    #expect(JSONScanner.firstMarked(JSONScanner.attentionMarks(in: both)) == (marked ? lane : 15))
                }
            }
        }
    }

    /// A key whose closing quote is within eight bytes of its opening one is read with one
    /// word, in line; any byte there that needs attention sends it to the full string scan.
    /// Either way a key gets the verdict, and the offset, the same string gets as a value.
    @Test func shortKeysAgreeWithStringValues() {
        let specials: [[UInt8]] = [
            [0x00], [0x1F], [UInt8(ascii: "\"")], [UInt8(ascii: "\\")], [UInt8(ascii: "\\"), UInt8(ascii: "n")],
            [UInt8(ascii: "\\"), UInt8(ascii: "q")], [0xC3, 0xA9], [0xC3], [0x80], [0xFF], [0x7F],
        ]
        for length in 0...10 {
            for offset in 0...length {
                for special in specials + [[]] {
                    var content = [UInt8](repeating: UInt8(ascii: "k"), count: length)
                    content.insert(contentsOf: special, at: offset)
                    let string = [0x22] + content + [0x22]
                    // With and without room for the eight-byte word after the key.
                    for padding in [0, 9] {
                        let tail = [UInt8](repeating: 0x20, count: padding)
                        let key = TestBytes.validate([UInt8(ascii: "{")] + string + Array(":1}".utf8) + tail)
                        let value = TestBytes.validate([UInt8(ascii: "[")] + string + Array(",1]".utf8) + tail)
                        #expect(key?.reason == value?.reason && key?.offset == value?.offset, "\(content) +\(padding)")
                    }
                }
            }
        }
    }

    @Test func depthLimitIsExact() {
        let limit = 5
        let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        let overLimit = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(TestBytes.validate(atLimit, maxDepth: limit) == nil)
        #expect(TestBytes.validate(overLimit, maxDepth: limit)?.reason == .tooDeep)
        let objects = String(repeating: "{\"a\":", count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)
        #expect(TestBytes.validate(objects, maxDepth: limit)?.reason == .tooDeep)
        #expect(TestBytes.validate(objects, maxDepth: limit + 1) == nil)
        // Scalars add no depth; a limit of 0 allows only scalars.
        #expect(TestBytes.validate("1", maxDepth: 0) == nil)
        #expect(TestBytes.validate("[]", maxDepth: 0)?.reason == .tooDeep)
    }

    @Test func defaultLimitIs128() {
        let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        let deep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        #expect(TestBytes.validate(ok) == nil)
        #expect(TestBytes.validate(deep)?.reason == .tooDeep)
    }

    /// Far deeper than any limit and than the stack could recurse: rejected, no crash.
    @Test func hundredThousandOpenBracketsAreRejected() {
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(TestBytes.validate(open)?.reason == .tooDeep)
        let balanced = open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(TestBytes.validate(balanced)?.reason == .tooDeep)
        // With a limit that admits it, the scan is iterative and succeeds.
        #expect(TestBytes.validate(balanced, maxDepth: 100_000) == nil)
        #expect(TestBytes.validate(open, maxDepth: 1_000_000)?.reason == .unexpectedEnd)
        // Mixed containers deeper than 64 exercise every word of the container bit stack.
        let mixed = String(repeating: "[{\"k\":", count: 150) + "0" + String(repeating: "}]", count: 150)
        #expect(TestBytes.validate(mixed, maxDepth: 300) == nil)
        let crossed = String(repeating: "[{\"k\":", count: 150) + "0" + String(repeating: "]}", count: 150)
        #expect(TestBytes.validate(crossed, maxDepth: 300)?.reason == .unexpectedByte)
    }

    @Test func errorOffsetsPointAtTheProblem() {
        #expect(TestBytes.validate("[1,2,x]")?.offset == 5)
        #expect(TestBytes.validate("\"ab\\q\"")?.offset == 3)
    }
}

@Suite struct JSONUTF8OracleTests {
    /// Random byte strings inside a JSON string: accepted exactly when the standard library
    /// finds them well-formed UTF-8 (bytes that JSON treats specially are left out).
    @Test func agreesWithTheStandardLibrary() {
        var generator = SystemRandomNumberGenerator()
        let interesting: [UInt8] = [
            0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED,
            0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ]
        var accepted = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 1...24, using: &generator)
            let content = (0..<length).map { _ in interesting.randomElement(using: &generator)! }
            let expected = String(validating: content, as: UTF8.self) != nil
            let found = TestBytes.validate([0x22] + content + [0x22]) == nil
            #expect(found == expected, "\(content)")
            if found { accepted += 1 }
        }
        #expect(accepted > 0)
    }
}
