import CLibUV
import RunnelBytes
import Testing

@testable import RunnelUV

extension RunnelUVTests {
    /// `WriteQueue` without sockets: appends, seals, writes that complete or fail, recycling;
    /// after each step its invariants hold and its counters say what was queued.
    @Suite struct WriteQueueTests {
        /// The bytes the queue would write next, segment by segment.
        func queued(_ queue: WriteQueue) -> [UInt8] {
            queue.withSegments { buffers in
                buffers.flatMap { Array(UnsafeRawBufferPointer(start: $0.base, count: $0.len)) }
            } ?? []
        }

        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

        /// Starts a write of everything queued, as the connection does; returns its request.
        func startWrite(_ queue: inout WriteQueue) -> (WriteRequest, [UInt8])? {
            var started: (WriteRequest, [UInt8])?
            queue.startWrite { request, buffers in
                started = (request, buffers.flatMap { Array(UnsafeRawBufferPointer(start: $0.base, count: $0.len)) })
            }
            return started
        }

        @Test func copiesCoalesceIntoOneSegment() {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            bytes("hello ").withUnsafeBytes { queue.append($0, from: pool) }
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            let fitted = bytes("wor").withUnsafeBytes { first in
                bytes("ld").withUnsafeBytes { queue.appendInOpenChunk(first, $0, none, none, lineEnd: true) }
            }
            #expect(fitted)
            #expect(queue.pendingBytes == 12 && queue.openBytes == 12 && queue.segmentBytes == 0)
            #expect(queue.invariantsHold)
            queue.seal()
            #expect(queue.segments.count == 1 && queue.segmentBytes == 12 && queue.openBytes == 0)
            #expect(queued(queue) == bytes("hello world\n"))
            #expect(queue.invariantsHold)
        }

        @Test func noOpenChunkMeansNoFastAppend() {
            var queue = WriteQueue()
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            let fitted = bytes("x").withUnsafeBytes { queue.appendInOpenChunk($0, none, none, none, lineEnd: false) }
            #expect(!fitted && queue.pendingBytes == 0 && queue.isEmpty)
        }

        @Test func referencesKeepTheirPlaceInOrder() {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            let shared = ByteBuffer(bytes("BIG"))
            bytes("a").withUnsafeBytes { queue.append($0, from: pool) }
            queue.append(reference: shared.bytes, owner: shared.storage)
            bytes("b").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            #expect(queued(queue) == bytes("aBIGb"))
            #expect(queue.segments.count == 3 && queue.segmentOwners.count == 3)
            let ownedByBuffer = queue.segmentOwners[1] === shared.storage
            #expect(ownedByBuffer)
            #expect(queue.pendingBytes == 5 && queue.invariantsHold)
        }

        @Test func aLargeCopySpansChunks() {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            let big = [UInt8](repeating: 7, count: WriteChunkPool.chunkSize + 100)
            bytes("x").withUnsafeBytes { queue.append($0, from: pool) }
            big.withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            #expect(queue.pendingBytes == big.count + 1 && queue.segmentBytes == big.count + 1)
            #expect(queued(queue) == bytes("x") + big)
            #expect(queue.invariantsHold)
        }

        @Test func aCompletedWriteLeavesNothingPendingAndRecyclesTheChunk() throws {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            bytes("one\n").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            let started1 = startWrite(&queue)
            let (request, written) = try #require(started1)
            #expect(written == bytes("one\n"))
            #expect(queue.segments.isEmpty && queue.inFlightBytes == 4 && queue.pendingBytes == 4)
            #expect(request.owners.count == 1 && request.byteCount == 4)
            // Written while the first is in flight: both count.
            bytes("two\n").withUnsafeBytes { queue.append($0, from: pool) }
            #expect(queue.pendingBytes == 8 && queue.invariantsHold)
            queue.seal()
            let started2 = startWrite(&queue)
            let (second, _) = try #require(started2)
            #expect(queue.finishedBytes == 0)
            queue.completeWrite(request, keepsSpare: true, pool: pool)
            #expect(queue.pendingBytes == 4 && queue.spareRequests.count == 1 && request.owners.isEmpty)
            #expect(queue.finishedBytes == 4)
            // The chunk is still referenced by the second write: it stays.
            let keepsChunk = queue.chunk != nil
            #expect(pool.spareCount == 0 && keepsChunk)
            queue.completeWrite(second, keepsSpare: true, pool: pool)
            #expect(queue.pendingBytes == 0 && queue.inFlightBytes == 0 && queue.invariantsHold)
            let gaveChunkBack = queue.chunk == nil
            #expect(gaveChunkBack && pool.spareCount == 1)
            // A spare request is reused.
            bytes("three\n").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            let started3 = startWrite(&queue)
            let (third, _) = try #require(started3)
            let reused = third === second || third === request
            #expect(reused)
        }

        /// A full chunk goes back to the pool once the kernel has its bytes, while the queue
        /// still has more to write: a connection that writes all the time takes its chunks from
        /// the pool, not from malloc. The open chunk stays with the queue.
        @Test func aWrittenFullChunkGoesBackWhileTheQueueIsBusy() throws {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            let full = [UInt8](repeating: 7, count: WriteChunkPool.chunkSize)
            full.withUnsafeBytes { queue.append($0, from: pool) }
            bytes("x").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            let started = startWrite(&queue)
            let (request, _) = try #require(started)
            bytes("y").withUnsafeBytes { queue.append($0, from: pool) }
            queue.completeWrite(request, keepsSpare: true, pool: pool)
            let keepsOpenChunk = queue.chunk != nil
            #expect(pool.spareCount == 1 && keepsOpenChunk && queue.pendingBytes == 1)
            // Written at once (`uv_try_write`): the whole segments' chunks go back too.
            full.withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            #expect(pool.spareCount == 0)
            queue.dropWritten(queue.segmentBytes - 1, pool: pool)
            #expect(pool.spareCount == 1 && queue.pendingBytes == 1 && queue.invariantsHold)
            // Sealed into a filter's records: the same.
            var sealed = WriteQueue()
            full.withUnsafeBytes { sealed.append($0, from: pool) }
            bytes("z").withUnsafeBytes { sealed.append($0, from: pool) }
            sealed.seal()
            #expect(pool.spareCount == 0)
            sealed.removeSegments(pool: pool)
            #expect(pool.spareCount == 1 && sealed.pendingBytes == 0 && sealed.invariantsHold)
        }

        @Test func aFailedWriteStillLeavesTheQueue() throws {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            bytes("lost\n").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            let started4 = startWrite(&queue)
            let (request, _) = try #require(started4)
            // A closing connection keeps no spare.
            queue.completeWrite(request, keepsSpare: false, pool: pool)
            #expect(queue.pendingBytes == 0 && queue.spareRequests.isEmpty && queue.invariantsHold)
        }

        @Test func aPartialTryWriteDropsWholeSegmentsAndCutsOne() {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            let shared = ByteBuffer(bytes("0123456789"))
            bytes("abc").withUnsafeBytes { queue.append($0, from: pool) }
            queue.append(reference: shared.bytes, owner: shared.storage)
            bytes("xyz").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            queue.dropWritten(5, pool: pool)
            #expect(queued(queue) == bytes("23456789xyz"))
            #expect(queue.segments.count == 2 && queue.pendingBytes == 11 && queue.invariantsHold)
            queue.dropWritten(11, pool: pool)
            #expect(queue.segments.isEmpty && queue.pendingBytes == 0 && queue.invariantsHold)
            #expect(queue.finishedBytes == 16)
        }

        @Test func segmentsSetAsideGoBackInFront() throws {
            let pool = WriteChunkPool()
            var queue = WriteQueue()
            bytes("app").withUnsafeBytes { queue.append($0, from: pool) }
            queue.seal()
            let held = queue.setSegmentsAside()
            #expect(queue.pendingBytes == 0 && queue.invariantsHold)
            var produced = false
            queue.append(from: pool) { room in
                guard !produced else { return 0 }
                produced = true
                room.copyBytes(from: bytes("hello"))
                return 5
            }
            let started5 = startWrite(&queue)
            let (request, written) = try #require(started5)
            #expect(written == bytes("hello"))
            queue.putBack(held)
            #expect(queued(queue) == bytes("app") && queue.pendingBytes == 8 && queue.invariantsHold)
            queue.completeWrite(request, keepsSpare: true, pool: pool)
            queue.removeSegments(pool: pool)
            #expect(queue.pendingBytes == 0 && queue.isEmpty && queue.invariantsHold)
        }
    }
}
