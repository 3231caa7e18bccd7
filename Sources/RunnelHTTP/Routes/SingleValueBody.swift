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
        do throws(ProtocolError) {
            let value = try bytes.withUnsafeBytes { bytes in
                Result { () throws(ProtocolError) in try PublishedValue.parse(bytes, maxDepth: publication.maxDepth) }
            }.get()
            let receivers = try publication.publish(value)
            publication.answer {
                // A durable value's receivers are counted once it is on disk, as `pub`'s are.
                let counted = publication.waitsForStore ? publication.subscriberCount : receivers
                var line = ServerLineWriter.reply(SessionReply(ref: nil, .published(receivers: counted)))
                return .json(line.finish())
            }
        } catch {
            publication.exchange.fail(HTTPFailure(error))
        }
    }

    func abort(_ failure: HTTPFailure) { publication.exchange.fail(failure) }
}
