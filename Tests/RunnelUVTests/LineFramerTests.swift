import RunnelUV
import Testing

extension RunnelUVTests {
    /// `LineFramer` without sockets: the cases the fuzz target's model checks, written out.
    @Suite struct LineFramerTests {
        enum Piece: Equatable {
            case line(String)
            case tooLong(Int)
        }

        /// Feeds `chunks` to `framer`, each from an allocation of its own (freed afterwards).
        static func frame(_ framer: inout LineFramer, _ chunks: [String], stopAfterEach: Bool = false) -> [Piece] {
            var pieces: [Piece] = []
            for chunk in chunks {
                let bytes = Array(chunk.utf8)
                bytes.withUnsafeBytes { buffer in
                    var position = 0
                    repeat {
                        position += framer.consume(UnsafeRawBufferPointer(rebasing: buffer[position...])) { piece in
                            switch piece {
                            case .line(let line): pieces.append(.line(String(decoding: line, as: UTF8.self)))
                            case .tooLong(let count): pieces.append(.tooLong(count))
                            }
                            return !stopAfterEach
                        }
                    } while position < buffer.count
                }
            }
            return pieces
        }

        @Test func linesAreSplitOnNewlinesWithOneCarriageReturnStripped() {
            var framer = LineFramer(maxLineLength: 100)
            let pieces = Self.frame(&framer, ["a\nb\r\n\n\r\r\nc"])
            #expect(pieces == [.line("a"), .line("b"), .line(""), .line("\r")])
            #expect(framer.unfinishedLineLength == 1)
        }

        @Test func aLineCutByChunksIsJoined() {
            var framer = LineFramer(maxLineLength: 100)
            #expect(Self.frame(&framer, ["ab", "c", "d\r", "\nx"]) == [.line("abcd")])
            #expect(framer.unfinishedLineLength == 1)
        }

        @Test func aWholeLineIsPassedInPlace() {
            var framer = LineFramer(maxLineLength: 100)
            let bytes = Array("xy\nline\n".utf8)
            bytes.withUnsafeBytes { buffer in
                var starts: [UnsafeRawPointer?] = []
                framer.consume(buffer) { piece in
                    if case .line(let line) = piece { starts.append(line.baseAddress) }
                    return true
                }
                #expect(starts == [buffer.baseAddress, buffer.baseAddress! + 3])
            }
        }

        @Test func longLinesAreReportedWithTheirFullLength() {
            var framer = LineFramer(maxLineLength: 4)
            // At the limit (the `\r` counts), over it whole, over it across chunks, and a line
            // that becomes too long only in its last chunk.
            let pieces = Self.frame(&framer, ["123\r\n12345\n12", "345", "6789\nok\n1234", "5\n"])
            #expect(pieces == [.line("123"), .tooLong(5), .tooLong(9), .line("ok"), .tooLong(5)])
            #expect(framer.bufferCapacity <= 4)
        }

        /// Regression (LineFramerFuzzer): a chunk ending inside a line was reported as only
        /// partly consumed, though its end had been held.
        @Test func consumeTakesEveryByteUnlessStopped() {
            var framer = LineFramer(maxLineLength: 100)
            let bytes = Array("ab\ncd".utf8)
            // The unfinished end is consumed too (held), not left for the caller.
            #expect(bytes.withUnsafeBytes { framer.consume($0) { _ in true } } == 5)
            #expect(bytes.withUnsafeBytes { framer.consume($0) { _ in false } } == 3)
        }

        @Test func stoppingLeavesTheFramerAtALineBoundary() {
            var framer = LineFramer(maxLineLength: 4)
            let pieces = Self.frame(&framer, ["a\n123456\nb", "c\nd"], stopAfterEach: true)
            #expect(pieces == [.line("a"), .tooLong(6), .line("bc")])
            #expect(framer.unfinishedLineLength == 1)
        }

        @Test func skippedLinesAreDroppedAndFramingResumesAtALineBoundary() {
            var framer = LineFramer(maxLineLength: 4)
            "abc\n123456789\nde".utf8.withContiguousStorageIfAvailable { framer.skipLines(UnsafeRawBufferPointer($0)) }
            #expect(framer.unfinishedLineLength == 2)
            #expect(Self.frame(&framer, ["f\n"]) == [.line("def")])
        }

        @Test func aBigBufferIsFreedAfterItsLineAndByReset() {
            var framer = LineFramer(maxLineLength: 1 << 20)
            let long = String(repeating: "x", count: 100_000)
            #expect(Self.frame(&framer, [long]).isEmpty)
            #expect(framer.bufferCapacity >= 100_000)
            #expect(Self.frame(&framer, ["\n"]) == [.line(long)])
            #expect(framer.bufferCapacity == 0)
            _ = Self.frame(&framer, ["abc"])
            framer.reset()
            #expect(framer.unfinishedLineLength == 0 && framer.bufferCapacity == 0)
        }
    }
}
