/// The one strict RFC 8259 grammar every JSON reader here is built on: a single forward pass
/// that reports tokens to a `JSONScanHandler`.
///
/// It never recurses (an explicit bit stack records whether each open container is an array
/// or an object), so no input can overflow the thread's stack; nesting beyond `maxDepth` is an
/// error. The bit stack lives in a temporary allocation sized by `min(maxDepth, input length)`,
/// which the standard library places on the stack for every realistic limit, so validating
/// allocates nothing on the heap. Strings are checked for well-formed UTF-8 and for escapes
/// that pair surrogates correctly. A value, not just an object or array, may stand at the top.
/// Stateless; safe to use from any thread on memory that does not change while scanned.
package enum JSONScanner {
    /// Scans `bytes` as exactly one JSON text (whitespace allowed around it).
    @inline(__always)
    package static func scan<Handler: JSONScanHandler>(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int, handler: inout Handler
    ) throws(JSONError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONError(.unexpectedEnd, at: 0)
        }
        let input = base.assumingMemoryBound(to: UInt8.self)
        let depthLimit = Swift.max(0, Swift.min(maxDepth, bytes.count))
        let words = depthLimit / 64 + 1
        let failure = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { stack in
            var cursor = Cursor(input: input, count: bytes.count)
            return cursor.run(maxDepth: depthLimit, stack: stack, handler: &handler)
        }
        if let failure { throw failure }
    }

    /// The scanning state: the input and the read position.
    struct Cursor {
        let input: UnsafePointer<UInt8>
        let count: Int
        var position = 0

        init(input: UnsafePointer<UInt8>, count: Int) {
            self.input = input
            self.count = count
        }

        @inline(__always) mutating func skipWhitespace() {
            while position < count {
                let c = input[position]
                guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
                position += 1
            }
        }

        /// Returns the error that stopped the scan, or nil when `input` is one valid JSON text.
        mutating func run<Handler: JSONScanHandler>(
            maxDepth: Int, stack: UnsafeMutableBufferPointer<UInt64>, handler: inout Handler
        ) -> JSONError? {
            // Bit `d` of the stack is set when the container open at depth d is an object.
            var depth = 0
            skipWhitespace()
            nextValue: while true {
                guard position < count else { return JSONError(.unexpectedEnd, at: position) }
                let start = position
                switch input[position] {
                case UInt8(ascii: "{"):
                    guard depth < maxDepth else { return JSONError(.tooDeep, at: position) }
                    handler.beginObject(at: start, depth: depth)
                    stack[depth >> 6] |= 1 << UInt64(depth & 63)
                    depth += 1
                    position += 1
                    skipWhitespace()
                    if position < count && input[position] == UInt8(ascii: "}") {
                        position += 1
                        depth -= 1
                        handler.endObject(end: position, depth: depth)
                    } else {
                        if let failure = scanKey(depth: depth, handler: &handler) { return failure }
                        continue nextValue
                    }
                case UInt8(ascii: "["):
                    guard depth < maxDepth else { return JSONError(.tooDeep, at: position) }
                    handler.beginArray(at: start, depth: depth)
                    stack[depth >> 6] &= ~(1 << UInt64(depth & 63))
                    depth += 1
                    position += 1
                    skipWhitespace()
                    if position < count && input[position] == UInt8(ascii: "]") {
                        position += 1
                        depth -= 1
                        handler.endArray(end: position, depth: depth)
                    } else {
                        continue nextValue
                    }
                case UInt8(ascii: "\""):
                    switch scanString() {
                    case .success(let token): handler.string(token, depth: depth)
                    case .failure(let failure): return failure
                    }
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    switch scanNumber() {
                    case .success(let token): handler.number(token, depth: depth)
                    case .failure(let failure): return failure
                    }
                case UInt8(ascii: "t"):
                    guard matchLiteral(0x74_72_75_65, length: 4) else { return JSONError(.unexpectedByte, at: start) }
                    handler.literal(.true, range: start..<position, depth: depth)
                case UInt8(ascii: "f"):
                    guard position + 5 <= count, input[position + 4] == UInt8(ascii: "e"),
                        matchLiteral(0x66_61_6C_73, length: 4)
                    else { return JSONError(.unexpectedByte, at: start) }
                    position += 1
                    handler.literal(.false, range: start..<position, depth: depth)
                case UInt8(ascii: "n"):
                    guard matchLiteral(0x6E_75_6C_6C, length: 4) else { return JSONError(.unexpectedByte, at: start) }
                    handler.literal(.null, range: start..<position, depth: depth)
                default:
                    return JSONError(.unexpectedByte, at: start)
                }

                // A value has ended: close containers or move to the next member or element.
                while true {
                    skipWhitespace()
                    if depth == 0 {
                        return position == count ? nil : JSONError(.trailingData, at: position)
                    }
                    guard position < count else { return JSONError(.unexpectedEnd, at: position) }
                    let c = input[position]
                    let inObject = stack[(depth - 1) >> 6] & (1 << UInt64((depth - 1) & 63)) != 0
                    if c == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace()
                        if inObject, let failure = scanKey(depth: depth, handler: &handler) { return failure }
                        continue nextValue
                    }
                    if inObject ? c == UInt8(ascii: "}") : c == UInt8(ascii: "]") {
                        position += 1
                        depth -= 1
                        if inObject {
                            handler.endObject(end: position, depth: depth)
                        } else {
                            handler.endArray(end: position, depth: depth)
                        }
                        continue
                    }
                    return JSONError(.unexpectedByte, at: position)
                }
            }
        }

        /// Matches 4 bytes given big-endian in `word`, advancing past them.
        @inline(__always) mutating func matchLiteral(_ word: UInt32, length: Int) -> Bool {
            guard position + length <= count else { return false }
            let found =
                UInt32(input[position]) << 24 | UInt32(input[position + 1]) << 16
                | UInt32(input[position + 2]) << 8 | UInt32(input[position + 3])
            guard found == word else { return false }
            position += length
            return true
        }

        /// A member name, the colon after it and the whitespace before the member's value.
        @inline(__always) mutating func scanKey<Handler: JSONScanHandler>(
            depth: Int, handler: inout Handler
        ) -> JSONError? {
            guard position < count else { return JSONError(.unexpectedEnd, at: position) }
            guard input[position] == UInt8(ascii: "\"") else { return JSONError(.unexpectedByte, at: position) }
            if let token = shortPlainString() {
                handler.key(token, depth: depth)
            } else {
                switch scanString() {
                case .success(let token): handler.key(token, depth: depth)
                case .failure(let failure): return failure
                }
            }
            skipWhitespace()
            guard position < count else { return JSONError(.unexpectedEnd, at: position) }
            guard input[position] == UInt8(ascii: ":") else { return JSONError(.unexpectedByte, at: position) }
            position += 1
            skipWhitespace()
            return nil
        }

        /// A string starting at the opening quote at `position`. Not inlined: inlined into
        /// `run`, its loop lost to the rest of `run` (more instructions for every long string).
        /// The call's cost matters for short strings only: most keys are read by
        /// `shortPlainString` instead.
        @inline(never) mutating func scanString() -> Result<JSONStringToken, JSONError> {
            let start = position
            position += 1
            var hasEscapes = false
            while true {
                skipPlainASCII()
                guard position < count else { return .failure(JSONError(.unexpectedEnd, at: position)) }
                let c = input[position]
                if c == UInt8(ascii: "\"") {
                    position += 1
                    return .success(JSONStringToken(range: start..<position, hasEscapes: hasEscapes))
                } else if c == UInt8(ascii: "\\") {
                    hasEscapes = true
                    if let failure = scanEscape() { return .failure(failure) }
                } else if c < 0x20 {
                    return .failure(JSONError(.controlCharacter, at: position))
                } else if c < 0x80 {
                    position += 1
                } else if let failure = scanUTF8Sequence(lead: c) {
                    return .failure(failure)
                }
            }
        }

        /// A string at `position` (its opening quote) whose closing quote is among the next
        /// eight bytes, with nothing before it that needs attention (most keys): read with one
        /// word, in line, without `scanString`'s call. Nil, with `position`
        /// unmoved, for any other string, which `scanString` then reads.
        @inline(__always) mutating func shortPlainString() -> JSONStringToken? {
            let content = position &+ 1
            guard content &+ 8 <= count else { return nil }
            let marks = JSONScanner.attentionMarks(in: word(at: content))
            guard marks != 0 else { return nil }
            let quote = content &+ marks.trailingZeroBitCount >> 3
            guard input[quote] == UInt8(ascii: "\"") else { return nil }
            let start = position
            position = quote &+ 1
            return JSONStringToken(range: start..<position, hasEscapes: false)
        }

        /// The eight bytes at `offset`, the first in the low bits.
        @inline(__always) func word(at offset: Int) -> UInt64 {
            UInt64(littleEndian: UnsafeRawPointer(input + offset).loadUnaligned(as: UInt64.self))
        }

        /// Skips, sixteen (or sixty-four) and then eight at a time, bytes that need no attention
        /// inside a string: ASCII other than control characters, `"` and `\`. Stops on the first
        /// byte that needs attention.
        /// It advances a local copy of `position`: a byte read through `input` may alias it as
        /// far as the compiler knows, so advancing `position` itself stored it at every word.
        @inline(__always) mutating func skipPlainASCII() {
            var at = position
            // Sixteen bytes a step where the code is optimised: unoptimised, the vector compares
            // are calls a lane, far dearer than the eight-byte step (bench/README.md), and debug
            // builds run every test's daemon. `plainLanesAgreeWithTheEightByteStep` checks the
            // step there. After the first step (where short strings end), a long string goes
            // sixty-four bytes a step, four vectors' marks merged into one test, until a step
            // has a mark; sixteen-byte steps then find the first.
            #if !DEBUG
                var wide = false
                while at &+ 16 <= count {
                    let marks = JSONScanner.attentionMarks(
                        in: UnsafeRawPointer(input + at).loadUnaligned(as: SIMD16<Int8>.self))
                    if any(marks) {
                        position = at &+ JSONScanner.firstMarked(marks)
                        return
                    }
                    at &+= 16
                    guard !wide else { continue }
                    wide = true
                    while at &+ 64 <= count {
                        let bytes = UnsafeRawPointer(input + at)
                        let marks =
                            JSONScanner.attentionMarks(in: bytes.loadUnaligned(as: SIMD16<Int8>.self))
                            .| JSONScanner.attentionMarks(
                                in: bytes.loadUnaligned(fromByteOffset: 16, as: SIMD16<Int8>.self))
                            .| JSONScanner.attentionMarks(
                                in: bytes.loadUnaligned(fromByteOffset: 32, as: SIMD16<Int8>.self))
                            .| JSONScanner.attentionMarks(
                                in: bytes.loadUnaligned(fromByteOffset: 48, as: SIMD16<Int8>.self))
                        if any(marks) { break }
                        at &+= 64
                    }
                }
            #endif
            while at + 8 <= count {
                let marks = JSONScanner.attentionMarks(in: word(at: at))
                if marks != 0 {
                    at += marks.trailingZeroBitCount >> 3
                    break
                }
                at += 8
            }
            position = at
        }

        /// One backslash escape at `position`.
        @inline(__always) mutating func scanEscape() -> JSONError? {
            guard position + 1 < count else { return JSONError(.unexpectedEnd, at: count) }
            switch input[position + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                position += 2
                return nil
            case UInt8(ascii: "u"):
                guard let unit = hexUnit(at: position + 2) else { return JSONError(.invalidEscape, at: position) }
                if unit & 0xFC00 == 0xDC00 { return JSONError(.loneSurrogate, at: position) }
                if unit & 0xFC00 == 0xD800 {
                    // A high surrogate must be followed at once by an escaped low surrogate.
                    guard position + 12 <= count, input[position + 6] == UInt8(ascii: "\\"),
                        input[position + 7] == UInt8(ascii: "u"),
                        let low = hexUnit(at: position + 8), low & 0xFC00 == 0xDC00
                    else { return JSONError(.loneSurrogate, at: position) }
                    position += 12
                } else {
                    position += 6
                }
                return nil
            default:
                return JSONError(.invalidEscape, at: position)
            }
        }

        /// The four hex digits at `offset`, or nil.
        @inline(__always) func hexUnit(at offset: Int) -> UInt16? {
            guard offset + 4 <= count else { return nil }
            var unit: UInt16 = 0
            for index in offset..<(offset + 4) {
                guard let digit = JSONScanner.hexValue(input[index]) else { return nil }
                unit = unit << 4 | UInt16(digit)
            }
            return unit
        }

        /// One multi-byte UTF-8 sequence whose lead byte `lead` is at `position` (Unicode
        /// Table 3-7: no overlongs, no encoded surrogates, nothing above U+10FFFF).
        @inline(__always) mutating func scanUTF8Sequence(lead: UInt8) -> JSONError? {
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return JSONError(.invalidUTF8, at: position)
            }
            guard position + length <= count else { return JSONError(.invalidUTF8, at: position) }
            let second = input[position + 1]
            guard second >= low && second <= high else { return JSONError(.invalidUTF8, at: position) }
            var index = position + 2
            while index < position + length {
                guard input[index] & 0xC0 == 0x80 else { return JSONError(.invalidUTF8, at: position) }
                index += 1
            }
            position += length
            return nil
        }

        /// A number starting at `position` (a `-` or a digit).
        @inline(__always) mutating func scanNumber() -> Result<JSONNumberToken, JSONError> {
            let start = position
            if input[position] == UInt8(ascii: "-") { position += 1 }
            guard position < count, isDigit(input[position]) else {
                return .failure(JSONError(.invalidNumber, at: start))
            }
            if input[position] == UInt8(ascii: "0") {
                position += 1
            } else {
                skipDigits()
            }
            var isInteger = true
            if position < count && input[position] == UInt8(ascii: ".") {
                position += 1
                guard position < count, isDigit(input[position]) else {
                    return .failure(JSONError(.invalidNumber, at: start))
                }
                skipDigits()
                isInteger = false
            }
            if position < count && (input[position] | 0x20) == UInt8(ascii: "e") {
                position += 1
                if position < count && (input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-")) {
                    position += 1
                }
                guard position < count, isDigit(input[position]) else {
                    return .failure(JSONError(.invalidNumber, at: start))
                }
                skipDigits()
                isInteger = false
            }
            return .success(JSONNumberToken(range: start..<position, isInteger: isInteger))
        }

        @inline(__always) func isDigit(_ c: UInt8) -> Bool { c &- UInt8(ascii: "0") < 10 }

        @inline(__always) mutating func skipDigits() {
            while position < count && isDigit(input[position]) { position += 1 }
        }
    }

    /// The high bit of each byte of `word` that needs attention inside a string: a control
    /// character, `"`, `\` or a byte of a multi-byte UTF-8 sequence. Borrows can only mark
    /// bytes after a real match, so the lowest marked byte is exactly the first such byte.
    @inline(__always) static func attentionMarks(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let below20 = (word &- ones &* 0x20) & ~word & highs
        let isQuote = (quote &- ones) & ~quote & highs
        let isBackslash = (backslash &- ones) & ~backslash & highs
        return below20 | isQuote | isBackslash | (word & highs)
    }

    /// `attentionMarks(in:)` for sixteen bytes at once: one vector compare for control
    /// characters and bytes of multi-byte sequences both (as signed bytes, exactly those below
    /// 0x20), two for `"` and `\`: about the instructions of one eight-byte step for twice the
    /// bytes.
    @inline(__always) static func attentionMarks(in bytes: SIMD16<Int8>) -> SIMDMask<SIMD16<Int8>> {
        // Vectors of a named type on both sides: against a scalar, or a vector whose type is
        // inferred, the generic operators were picked, which compare lane by lane.
        typealias Bytes = SIMD16<Int8>
        return (bytes .< Bytes(repeating: 0x20)) .| (bytes .== Bytes(repeating: 0x22))
            .| (bytes .== Bytes(repeating: 0x5C))
    }

    /// The place of the first marked lane of `marks` (16: none is).
    @inline(__always) static func firstMarked(_ marks: SIMDMask<SIMD16<Int8>>) -> Int {
        // Each lane all ones or all zeros; eight lanes a word, the first lowest.
        let words = unsafeBitCast(marks, to: SIMD2<UInt64>.self)
        if words[0] != 0 { return words[0].trailingZeroBitCount >> 3 }
        return 8 &+ words[1].trailingZeroBitCount >> 3
    }

    /// The value of one hex digit, or nil.
    @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
