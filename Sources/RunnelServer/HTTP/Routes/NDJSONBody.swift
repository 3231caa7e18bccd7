/// The body of a `POST /pub/SUBJECT` in NDJSON: each line one JSON value, published as soon
/// as its line is complete, so a body of any length streams through in the memory of one
/// line (`max_line_bytes`). Blank lines are skipped; a `\r` before a `\n` is dropped. The
/// first bad line fails the request there: nothing after it is published, and the error,
/// with `published`, is answered at once (the rest of the body is read and thrown away).
/// Answered `{"ok":true,"published":N}` after the last line. Loop thread only.
final class NDJSONBody: HTTPBodyReader {
    private let publication: Publication
    private let maxLineBytes: Int
    /// The start of a line split across reads.
    private var partial: [UInt8] = []
    private var failed = false

    init(_ publication: Publication, maxLineBytes: Int) {
        self.publication = publication
        self.maxLineBytes = maxLineBytes
    }

    func read(_ bytes: UnsafeRawBufferPointer) {
        guard !failed else { return }
        var rest = bytes
        while let newline = rest.firstIndex(of: 0x0A) {
            let line = UnsafeRawBufferPointer(rebasing: rest[..<newline])
            rest = UnsafeRawBufferPointer(rebasing: rest[(newline + 1)...])
            if partial.isEmpty {
                publish(line)
            } else {
                partial.append(contentsOf: line)
                partial.withUnsafeBytes { publish($0) }
                partial.removeAll(keepingCapacity: true)
            }
            if failed { return }
        }
        // An unfinished line is kept only up to the limit (and a `\r`): past it, it has failed.
        guard partial.count + rest.count <= maxLineBytes + 1 else {
            fail(lineTooLong)
            return
        }
        partial.append(contentsOf: rest)
    }

    func finish() {
        guard !failed else { return }
        if !partial.isEmpty {
            partial.withUnsafeBytes { publish($0) }
            if failed { return }
        }
        let publication = self.publication
        publication.answer {
            var line = ServerLineWriter.reply(ok: true, ref: nil)
            line.member("published", integer: publication.published)
            return .json(line.finish())
        }
    }

    func abort(_ failure: HTTPFailure) {
        guard !failed else { return }
        fail(failure.error)
    }

    /// Publishes one line (without its `\n`), or fails the request at it.
    private func publish(_ line: UnsafeRawBufferPointer) {
        var line = line
        if line.last == 0x0D { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
        do throws(ProtocolError) {
            guard line.count <= maxLineBytes else { throw lineTooLong }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
            try publication.publish(try PublishedValue.parse(line, maxDepth: publication.maxDepth))
        } catch {
            fail(error)
        }
    }

    private var lineTooLong: ProtocolError {
        ProtocolError(.lineTooLong, "a line is over max_line_bytes (\(maxLineBytes))")
    }

    private func fail(_ error: ProtocolError) {
        failed = true
        partial = []
        publication.fail(error)
    }
}
