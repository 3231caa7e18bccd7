import RunnelJSON
import RunnelProtocol
import RunnelServer

/// The body of a `POST /pub/SUBJECT` in NDJSON: each line one JSON value, the complete lines of
/// each read published together as one batch (`Publication.publish`), so a body of any length
/// streams through in the memory of one read and one line (`max_line_bytes`). Blank lines are
/// skipped; a `\r` before a `\n` is dropped. The first bad line fails the request there: the
/// lines before it are published, nothing after it, and the error, with `published`, is
/// answered then (the rest of the body is read and thrown away). Answered
/// `{"ok":true,"published":N}` after the last line.
///
/// While a batch is out (the owner is on another loop, or the publication is paused under
/// `backpressure` and the batch's rest waits for it to resume) the connection is not read: what
/// was read already is kept in `held` and taken, in order, once the batch is done. Loop thread
/// only. Lifetime rule: the exchange holds it until the body has ended; it holds its
/// publication, and a batch out holds it.
final class NDJSONBody: HTTPBodyReader {
    private let publication: Publication
    private let maxLineBytes: Int
    /// The start of a line split across reads.
    private var partial: [UInt8] = []
    private var failed = false
    /// A batch is out: what is read meanwhile goes to `held`.
    private var isBusy = false
    /// Body bytes read while a batch was out, not looked at yet.
    private var held: [UInt8] = []
    /// The body ended while a batch was out: `finish` once it is done and `held` taken.
    private var finishesAfterHeld = false
    /// The connection is not read until the batch out is done.
    private var holdsInput = false
    /// The body failed (`abort`) while a batch was out: the request fails with it once that
    /// batch and what was held meanwhile are done, so `published` counts them.
    private var abortsAfterBatch: ProtocolError?

    init(_ publication: Publication, maxLineBytes: Int) {
        self.publication = publication
        self.maxLineBytes = maxLineBytes
    }

    func read(_ bytes: UnsafeRawBufferPointer) {
        guard !failed else { return }
        guard !isBusy else { return held.append(contentsOf: bytes) }
        take(bytes, isLast: false)
    }

    func finish() {
        guard !failed else { return }
        guard !isBusy else {
            finishesAfterHeld = true
            return
        }
        take(UnsafeRawBufferPointer(start: nil, count: 0), isLast: true)
    }

    func abort(_ failure: HTTPFailure) {
        guard !failed else { return }
        guard !isBusy else {
            abortsAfterBatch = failure.error
            return
        }
        fail(failure.error)
    }

    /// Publishes the complete lines of `bytes` (with the end of the body, `isLast`, the line
    /// it leaves unfinished too) and what a bad line fails the request with, after them.
    private func take(_ bytes: UnsafeRawBufferPointer, isLast: Bool) {
        var values: [RawJSON] = []
        var error: ProtocolError?
        var rest = bytes
        while let newline = rest.firstIndex(of: 0x0A) {
            let line = UnsafeRawBufferPointer(rebasing: rest[..<newline])
            rest = UnsafeRawBufferPointer(rebasing: rest[(newline + 1)...])
            if partial.isEmpty {
                error = parse(line, into: &values)
            } else {
                partial.append(contentsOf: line)
                error = partial.withUnsafeBytes { parse($0, into: &values) }
                partial.removeAll(keepingCapacity: true)
            }
            if error != nil { break }
        }
        if error == nil {
            // An unfinished line is kept only up to the limit (and a `\r`): past it, it has failed.
            if partial.count + rest.count > maxLineBytes + 1 {
                error = lineTooLong
            } else {
                partial.append(contentsOf: rest)
                if isLast && !partial.isEmpty {
                    error = partial.withUnsafeBytes { parse($0, into: &values) }
                    partial = []
                }
            }
        }
        send(values, isLast: isLast, failing: error)
    }

    /// Publishes `values`, then fails the request with `error`, if any, or ends it (`isLast`),
    /// or takes what was held meanwhile; while the publication is paused, once it resumes (a
    /// batch the pause cut short goes on the same way).
    private func send(_ values: [RawJSON], isLast: Bool, failing error: ProtocolError?) {
        guard !failed else { return }
        // Only the last batch waits for the store: one that a bad line ends is the last.
        let endsRequest = isLast || error != nil
        if values.isEmpty && !endsRequest { return resumeIfHeld() }
        isBusy = true
        if publication.isPaused {
            publication.whenResumed { self.send(values, isLast: isLast, failing: error) }
        } else {
            publication.publish(values, isLast: endsRequest) { receipt in
                self.received(receipt, of: values, isLast: isLast, failing: error)
            }
        }
        if isBusy && !holdsInput {
            holdsInput = true
            publication.exchange.pauseInput()
        }
    }

    private func received(
        _ receipt: PublishedBatch.Receipt, of values: [RawJSON], isLast: Bool, failing error: ProtocolError?
    ) {
        guard !failed else { return }
        if let failure = receipt.failure { return fail(failure) }
        guard receipt.published == values.count else {
            return send(Array(values[receipt.published...]), isLast: isLast, failing: error)
        }
        if let error { return fail(error) }
        isBusy = false
        if isLast {
            let publication = self.publication
            return publication.answer {
                var line = ServerLineWriter.reply(ok: true, ref: nil)
                line.member("published", integer: publication.published)
                return .json(line.finish())
            }
        }
        resumeIfHeld()
    }

    /// Takes what was read while a batch was out, then the end of the body or the connection.
    private func resumeIfHeld() {
        if !held.isEmpty {
            let pending = held
            held = []
            pending.withUnsafeBytes { take($0, isLast: false) }
            if isBusy || failed { return }
        }
        if let aborted = abortsAfterBatch { return fail(aborted) }
        if finishesAfterHeld {
            finishesAfterHeld = false
            return finish()
        }
        if holdsInput {
            holdsInput = false
            publication.exchange.resumeInput()
        }
    }

    /// Parses one line (without its `\n`) into `values`; the error that fails the request at
    /// it, if any.
    private func parse(_ line: UnsafeRawBufferPointer, into values: inout [RawJSON]) -> ProtocolError? {
        var line = line
        if line.last == 0x0D { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
        do throws(ProtocolError) {
            guard line.count <= maxLineBytes else { throw lineTooLong }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return nil }
            values.append(try PublishedValue.parse(line, maxDepth: publication.maxDepth))
            return nil
        } catch {
            return error
        }
    }

    private var lineTooLong: ProtocolError {
        ProtocolError(.lineTooLong, "a line is over max_line_bytes (\(maxLineBytes))")
    }

    private func fail(_ error: ProtocolError) {
        failed = true
        isBusy = false
        partial = []
        held = []
        publication.fail(error)
        if holdsInput {
            // The rest of the body is read and thrown away.
            holdsInput = false
            publication.exchange.resumeInput()
        }
    }
}
