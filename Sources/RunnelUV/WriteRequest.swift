import CLibUV
import RunnelBytes

/// One `uv_write` in flight: the request, the objects owning the bytes its buffers point
/// at, and how many bytes it carries.
///
/// Thread rules: loop thread only. Lifetime rule: retained through `request->data` from
/// `uv_write` until the write callback; it holds its owners (chunks, `ByteBuffer` storage) until
/// then, so the bytes stay valid while libuv may read them. A connection keeps a few spare
/// requests for reuse; the `uv_write_t` memory is freed in `deinit`.
final class WriteRequest {
    let request: UnsafeMutablePointer<uv_write_t> = .allocate(capacity: 1)
    var owners: [AnyObject] = []
    var byteCount = 0
    var connection: TCPConnection?

    deinit { request.deallocate() }
}
