import RunnelJSON
import RunnelProtocol
import RunnelServer

/// The body of a `POST /pub/SUBJECT` that is one JSON value: gathered whole (within
/// `max_body_bytes`, which the parser enforces), then published; answered
/// `{"ok":true,"receivers":N}`, `pub`'s reply. Loop thread only.
final class SingleValueBody: HTTPBodyReader {
    private let publication: Publication
    private var bytes: [UInt8] = []

    init(_ publication: Publication) { self.publication = publication }

    func read(_ piece: UnsafeRawBufferPointer) { bytes.append(contentsOf: piece) }

    func finish() {
        let publication = self.publication
        let value: RawJSON
        do throws(ProtocolError) {
            value = try bytes.withUnsafeBytes { bytes in
                Result { () throws(ProtocolError) in try PublishedValue.parse(bytes, maxDepth: publication.maxDepth) }
            }.get()
        } catch {
            return publication.exchange.fail(HTTPFailure(error))
        }
        publication.publish([value], isLast: true) { receipt in
            if let failure = receipt.failure { return publication.exchange.fail(HTTPFailure(failure)) }
            // A durable value's receivers are counted once it is on disk, as `pub`'s are.
            publication.answer {
                var line = ServerLineWriter.reply(SessionReply(ref: nil, .published(receivers: receipt.receivers)))
                return .json(line.finish())
            }
        }
    }

    func abort(_ failure: HTTPFailure) { publication.exchange.fail(failure) }
}
