import FuzzSupport
import RunnelUV

// The line framer against a reference model.
//
// Input layout: byte 0 picks the maximum line length (and, when its top two bits are set, a
// large mode where the payload is repeated and chunks are 1 KiB units, to cross the framer's
// 64 KiB buffer limit); byte 1 the number of chunk descriptors that follow (0-31) and byte 2
// after how many pieces the closure asks to stop (0: never). Each descriptor byte gives a
// chunk size (low 7 bits) and, in its top bit, that the chunk is consumed with `skipLines`
// (a connection without a delegate). The rest is the payload; the last chunk takes whatever
// the descriptors left.
//
// The model splits the whole payload at every `\n`: a line whose `\n` falls in a skipped
// chunk is dropped; any other is a `.tooLong(length)` when longer than the maximum, else a
// `.line` of its bytes without one trailing `\r`; bytes after the last `\n` never come out.
// Checked: the framer's pieces equal the model's, in order; a line that began in the chunk
// being consumed is passed as a pointer into that chunk (no copy); `consume` returns the
// offset just past the `\n` of the piece where the closure stopped (framing resumes from
// there); after every chunk the unfinished line's length is the bytes since the last `\n`
// and the partial buffer never exceeds the maximum. Each chunk is copied into an allocation
// of its exact size and freed after use, so AddressSanitizer sees any read outside it or any
// pointer kept into an old chunk.

enum Piece: Equatable {
    case line([UInt8])
    case tooLong(Int)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func lineFramerFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard input.count >= 3 else { return 0 }
    let large = input[0] & 0xC0 == 0xC0
    let maxLineLength = large ? 60_000 + Int(input[0] & 0x3F) * 1_000 : 1 + Int(input[0] % 48)
    let descriptorCount = min(Int(input[1] % 32), input.count - 3)
    let stopEvery = Int(input[2] % 4)
    let descriptors = Array(input[3..<(3 + descriptorCount)])
    var payload = Array(input[(3 + descriptorCount)...])
    if large { payload = Array(repeating: payload, count: 64).flatMap { $0 } }
    let unit = large ? 1024 : 1

    // Chunks: (range in the payload, skipped?).
    var chunks: [(range: Range<Int>, skip: Bool)] = []
    var offset = 0
    for descriptor in descriptors where offset < payload.count {
        let end = min(payload.count, offset + Int(descriptor & 0x7F) * unit)
        chunks.append((offset..<end, descriptor & 0x80 != 0))
        offset = end
    }
    if offset < payload.count || chunks.isEmpty { chunks.append((offset..<payload.count, false)) }

    let expected = model(payload, chunks: chunks, maxLineLength: maxLineLength)
    var actual: [Piece] = []
    var framer = LineFramer(maxLineLength: maxLineLength)
    var lineStart = 0  // where the line being framed begins in the payload
    var piecesSinceStop = 0
    for chunk in chunks {
        let count = chunk.range.count
        let copy = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 1)
        defer { copy.deallocate() }
        payload.withUnsafeBytes { whole in
            if count > 0 { copy.copyMemory(from: whole.baseAddress! + chunk.range.lowerBound, byteCount: count) }
        }
        let bytes = UnsafeRawBufferPointer(start: copy, count: count)
        if chunk.skip {
            framer.skipLines(bytes)
            if let last = bytes.lastIndex(of: 10) { lineStart = chunk.range.lowerBound + last + 1 }
        } else {
            var position = 0
            while position < count {
                let rest = UnsafeRawBufferPointer(rebasing: bytes[position...])
                var stoppedAfter: Int?
                let consumed = framer.consume(rest) { piece in
                    // Where this piece's `\n` is, from the payload.
                    let searchFrom = max(lineStart, chunk.range.lowerBound + position)
                    guard let newline = payload[searchFrom...].firstIndex(of: 10) else {
                        fatalError("a piece with no newline left in the chunk")
                    }
                    require(newline < chunk.range.upperBound, "a piece before its newline arrived")
                    switch piece {
                    case .line(let line):
                        require(line.count <= maxLineLength, "a line over the maximum")
                        if lineStart >= chunk.range.lowerBound {
                            // Whole in this chunk: must point into it, at the line's start.
                            require(
                                line.baseAddress == UnsafeRawPointer(copy + (lineStart - chunk.range.lowerBound)),
                                "a line wholly inside the chunk was not passed in place")
                        }
                        actual.append(.line(Array(line)))
                    case .tooLong(let length):
                        require(length > maxLineLength, "a line within the maximum reported too long")
                        actual.append(.tooLong(length))
                    }
                    lineStart = newline + 1
                    piecesSinceStop += 1
                    if stopEvery > 0 && piecesSinceStop % stopEvery == 0 {
                        stoppedAfter = newline + 1 - chunk.range.lowerBound
                        return false
                    }
                    return true
                }
                if let stoppedAfter {
                    require(position + consumed == stoppedAfter, "consume did not stop after the piece")
                } else {
                    require(consumed == count - position, "consume stopped without being asked")
                }
                position += consumed
            }
        }
        let unfinished = chunk.range.upperBound - lineStart
        require(framer.unfinishedLineLength == unfinished, "wrong unfinished line length")
        require(framer.bufferCapacity <= maxLineLength, "partial buffer over the maximum")
        if unfinished == 0 || unfinished > maxLineLength {
            // Nothing held: a buffer past the retained limit must have been freed.
            require(framer.bufferCapacity <= LineFramer.retainedBufferLimit, "a large partial buffer kept")
        }
    }
    require(actual == expected, "framed pieces differ from the model")
    framer.reset()
    require(framer.unfinishedLineLength == 0 && framer.bufferCapacity == 0, "reset left state behind")
    return 0
}

/// The pieces a naive split of the whole payload gives.
func model(_ payload: [UInt8], chunks: [(range: Range<Int>, skip: Bool)], maxLineLength: Int) -> [Piece] {
    var pieces: [Piece] = []
    var start = 0
    var chunkIndex = 0
    while let newline = payload[start...].firstIndex(of: 10) {
        while !chunks[chunkIndex].range.contains(newline) { chunkIndex += 1 }
        if !chunks[chunkIndex].skip {
            var line = Array(payload[start..<newline])
            if line.count > maxLineLength {
                pieces.append(.tooLong(line.count))
            } else {
                if line.last == 13 { line.removeLast() }
                pieces.append(.line(line))
            }
        }
        start = newline + 1
    }
    return pieces
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("LineFramerFuzzer_main")
public func lineFramerFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in lineFramerFuzzerTestOneInput(data!, size) }
}
