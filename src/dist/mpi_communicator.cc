#include "dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "dist/call_timer.h"
#include "dist/mpi_runtime.h"
#include "dist/reduce_sum.h"

namespace pagellm::dist {
namespace {

constexpr int kSendRecvTag = 1;

}  // namespace

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;  // the one call in flight
  std::vector<const std::byte*> sources;   // [world_size]: all-reduce summands, rank order
  // [world_size] byte counts and offsets of the reduce-scatter's segments: what this rank
  // sends to each rank (its segment of our piece) and receives from each (our segment).
  std::vector<int> seg_counts, seg_displs, own_counts, own_displs;
};

MpiCommunicator::MpiCommunicator(const MpiOptions& options) : options_(options), handle_(std::make_unique<Handle>()) {}

MpiCommunicator::~MpiCommunicator() {
  // A failed call's request is still posted: freeing the communicator under it is not
  // allowed, and the process is about to abort anyway.
  if (failed_.ok() && handle_->comm != MPI_COMM_NULL && MpiInitialized()) MPI_Comm_free(&handle_->comm);
}

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(const MpiOptions& options) {
  if (!MpiInitialized()) return FailedPreconditionError("MPI communicator: InitMpi() must run first");
  if (options.chunk_bytes < 4096 || options.chunk_bytes > (1 << 30) || options.chunk_bytes % 64 != 0) {
    return InvalidArgumentError("MPI communicator: chunk_bytes must be a multiple of 64 in [4096, 1 GiB]");
  }
  std::unique_ptr<MpiCommunicator> comm(new MpiCommunicator(options));
  MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &comm->world_size_);
  for (auto* v : {&comm->handle_->seg_counts, &comm->handle_->seg_displs, &comm->handle_->own_counts,
                  &comm->handle_->own_displs}) {
    v->resize(static_cast<size_t>(comm->world_size_));
  }
  comm->handle_->sources.resize(static_cast<size_t>(comm->world_size_));
  // Nonblocking, so a rank that arrives early polls (and sleeps) instead of spinning
  // while the others still load their model.
  PAGELLM_RETURN_IF_ERROR(comm->Check(MPI_Comm_idup(MPI_COMM_WORLD, &comm->handle_->comm, &comm->handle_->request),
                                      "communicator creation"));
  comm->options_.timeout_s = options.init_timeout_s;
  PAGELLM_RETURN_IF_ERROR(comm->Complete("communicator creation", 0));
  comm->options_.timeout_s = options.timeout_s;
  // Errors come back as codes (and become Unavailable) instead of aborting in MPI.
  MPI_Comm_set_errhandler(comm->handle_->comm, MPI_ERRORS_RETURN);
  comm->ResetStats();
  return comm;
}

Status MpiCommunicator::Fail(Status status) {
  failed_ = status;
  MarkMpiBroken();
  return status;
}

Status MpiCommunicator::Check(int mpi_error, const char* what) {
  if (mpi_error == MPI_SUCCESS) return OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(mpi_error, text, &len);
  return Fail(UnavailableError(fmt::format("distributed: MPI {} failed on rank {}: {}", what, rank_,
                                           std::string(text, static_cast<size_t>(len)))));
}

Status MpiCommunicator::Complete(const char* what, int64_t nbytes) {
  MPI_Request& request = handle_->request;
  int done = 0;
  PAGELLM_RETURN_IF_ERROR(Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what));
  if (done != 0) return OkStatus();
  const double start = SteadySeconds();
  double waited = 0;
  while (done == 0) {
    if (options_.timeout_s > 0 && waited > options_.timeout_s) {
      stats_.wait_s += waited;
      return Fail(UnavailableError(
          fmt::format("distributed: {} #{} ({} bytes) on rank {} did not complete within {:.1f} s (a rank hung?)", what,
                      num_collectives_, nbytes, rank_, options_.timeout_s)));
    }
    // Sleeping a tenth of the time waited bounds the added latency at ~10 %.
    if (waited > options_.spin_s) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::clamp(waited / 10, 5e-6, 2e-3)));
    }
    PAGELLM_RETURN_IF_ERROR(Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what));
    waited = SteadySeconds() - start;
  }
  stats_.wait_s += waited;
  return OkStatus();
}

Status MpiCommunicator::CheckUsable(int rank_arg, bool any_rank_ok) const {
  if (!failed_.ok()) return failed_;
  if (!any_rank_ok && (rank_arg < 0 || rank_arg >= world_size_)) {
    return InvalidArgumentError(fmt::format("distributed: rank {} is not in [0, {})", rank_arg, world_size_));
  }
  return OkStatus();
}

std::byte* MpiCommunicator::Scratch(size_t nbytes) {
  if (scratch_.size() < nbytes) scratch_.resize(nbytes);
  return scratch_.data();
}

void MpiCommunicator::SumInRankOrder(const std::byte* first, int64_t stride, int64_t nbytes, DType dtype,
                                     std::byte* out) {
  for (int p = 0; p < world_size_; ++p) handle_->sources[static_cast<size_t>(p)] = first + p * stride;
  if (dtype == DType::kF32) {
    SumF32(reinterpret_cast<const float* const*>(handle_->sources.data()), world_size_, nbytes / 4,
           reinterpret_cast<float*>(out));
  } else {
    SumBf16(reinterpret_cast<const uint16_t* const*>(handle_->sources.data()), world_size_, nbytes / 2,
            reinterpret_cast<uint16_t*>(out));
  }
}

Status MpiCommunicator::AllGatherSum(std::byte* piece, int64_t nbytes, DType dtype) {
  std::byte* all = Scratch(static_cast<size_t>(nbytes) * static_cast<size_t>(world_size_));  // [world][nbytes]
  PAGELLM_RETURN_IF_ERROR(Check(MPI_Iallgather(piece, static_cast<int>(nbytes), MPI_BYTE, all,
                                               static_cast<int>(nbytes), MPI_BYTE, handle_->comm, &handle_->request),
                                "all-reduce"));
  PAGELLM_RETURN_IF_ERROR(Complete("all-reduce", nbytes));
  SumInRankOrder(all, nbytes, nbytes, dtype, piece);
  return OkStatus();
}

Status MpiCommunicator::ReduceScatterSum(std::byte* piece, int64_t nbytes, DType dtype) {
  Handle& h = *handle_;
  const int64_t elem = dtype == DType::kF32 ? 4 : 2;
  const int64_t num_elems = nbytes / elem;
  for (int p = 0; p < world_size_; ++p) {  // segment p: elements [num * p / N, num * (p + 1) / N)
    const int64_t begin = num_elems * p / world_size_, end = num_elems * (p + 1) / world_size_;
    h.seg_counts[static_cast<size_t>(p)] = static_cast<int>((end - begin) * elem);
    h.seg_displs[static_cast<size_t>(p)] = static_cast<int>(begin * elem);
  }
  const int own_bytes = h.seg_counts[static_cast<size_t>(rank_)];
  for (int p = 0; p < world_size_; ++p) {
    h.own_counts[static_cast<size_t>(p)] = own_bytes;
    h.own_displs[static_cast<size_t>(p)] = p * own_bytes;
  }
  std::byte* mine = Scratch(static_cast<size_t>(own_bytes) * static_cast<size_t>(world_size_));  // [world][own]
  PAGELLM_RETURN_IF_ERROR(Check(MPI_Ialltoallv(piece, h.seg_counts.data(), h.seg_displs.data(), MPI_BYTE, mine,
                                               h.own_counts.data(), h.own_displs.data(), MPI_BYTE, h.comm, &h.request),
                                "all-reduce (reduce-scatter)"));
  PAGELLM_RETURN_IF_ERROR(Complete("all-reduce (reduce-scatter)", nbytes));
  SumInRankOrder(mine, own_bytes, own_bytes, dtype, piece + h.seg_displs[static_cast<size_t>(rank_)]);
  PAGELLM_RETURN_IF_ERROR(Check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, piece, h.seg_counts.data(),
                                                h.seg_displs.data(), MPI_BYTE, h.comm, &h.request),
                                "all-reduce (all-gather)"));
  return Complete("all-reduce (all-gather)", nbytes);
}

Status MpiCommunicator::AllReduceSum(void* data, int64_t count, DType dtype) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(0, true));
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return InvalidArgumentError(fmt::format("all-reduce of {} is not supported (f32, bf16)", DTypeName(dtype)));
  }
  if (world_size_ == 1 || count == 0) return OkStatus();
  CallTimer timer(stats_);
  const int64_t elem = dtype == DType::kF32 ? 4 : 2;
  return ForEachChunk(count * elem, options_.chunk_bytes / elem * elem, [&](int64_t off, int64_t n) -> Status {
    ++num_collectives_;
    stats_.num_bytes += n;
    std::byte* piece = static_cast<std::byte*>(data) + off;
    return n >= options_.reduce_scatter_min_bytes && n / elem >= world_size_ ? ReduceScatterSum(piece, n, dtype)
                                                                              : AllGatherSum(piece, n, dtype);
  });
}

Status MpiCommunicator::Broadcast(void* data, int64_t nbytes, int root) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(root, false));
  if (world_size_ == 1 || nbytes == 0) return OkStatus();
  CallTimer timer(stats_);
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    ++num_collectives_;
    PAGELLM_RETURN_IF_ERROR(Check(MPI_Ibcast(static_cast<std::byte*>(data) + off, static_cast<int>(n), MPI_BYTE, root,
                                             handle_->comm, &handle_->request),
                                  "broadcast"));
    PAGELLM_RETURN_IF_ERROR(Complete("broadcast", n));
    if (rank_ == root) stats_.num_bytes += n;
    return OkStatus();
  });
}

Status MpiCommunicator::Gather(const void* send, int64_t nbytes, void* recv, int root) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(root, false));
  const bool is_root = rank_ == root;
  if (is_root && recv == nullptr && nbytes > 0) return InvalidArgumentError("Gather: the root needs a buffer");
  if (world_size_ == 1 || nbytes == 0) {
    if (is_root && nbytes > 0) std::memcpy(recv, send, static_cast<size_t>(nbytes));
    return OkStatus();
  }
  CallTimer timer(stats_);
  // One piece: straight into `recv`. Longer messages land piece by piece in the scratch
  // ([world][piece]) and the root moves each rank's piece to its place.
  const bool direct = nbytes <= options_.chunk_bytes;
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    ++num_collectives_;
    std::byte* land = !is_root ? nullptr
                      : direct ? static_cast<std::byte*>(recv)
                               : Scratch(static_cast<size_t>(n) * static_cast<size_t>(world_size_));
    PAGELLM_RETURN_IF_ERROR(Check(MPI_Igather(static_cast<const std::byte*>(send) + off, static_cast<int>(n), MPI_BYTE,
                                              land, static_cast<int>(n), MPI_BYTE, root, handle_->comm,
                                              &handle_->request),
                                  "gather"));
    PAGELLM_RETURN_IF_ERROR(Complete("gather", n));
    stats_.num_bytes += n;
    if (is_root && !direct) {
      for (int p = 0; p < world_size_; ++p) {
        std::memcpy(static_cast<std::byte*>(recv) + p * nbytes + off, land + p * n, static_cast<size_t>(n));
      }
    }
    return OkStatus();
  });
}

Status MpiCommunicator::Send(const void* data, int64_t nbytes, int dst) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(dst, false));
  if (dst == rank_) return InvalidArgumentError("Send: a rank cannot send to itself");
  CallTimer timer(stats_);
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    PAGELLM_RETURN_IF_ERROR(Check(MPI_Isend(static_cast<const std::byte*>(data) + off, static_cast<int>(n), MPI_BYTE,
                                            dst, kSendRecvTag, handle_->comm, &handle_->request),
                                  "send"));
    PAGELLM_RETURN_IF_ERROR(Complete("send", n));
    stats_.num_bytes += n;
    return OkStatus();
  });
}

Status MpiCommunicator::Recv(void* data, int64_t nbytes, int src) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(src, false));
  if (src == rank_) return InvalidArgumentError("Recv: a rank cannot receive from itself");
  CallTimer timer(stats_);
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    PAGELLM_RETURN_IF_ERROR(Check(MPI_Irecv(static_cast<std::byte*>(data) + off, static_cast<int>(n), MPI_BYTE, src,
                                            kSendRecvTag, handle_->comm, &handle_->request),
                                  "receive"));
    return Complete("receive", n);
  });
}

Status MpiCommunicator::Barrier() {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(0, true));
  if (world_size_ == 1) return OkStatus();
  CallTimer timer(stats_);
  ++num_collectives_;
  PAGELLM_RETURN_IF_ERROR(Check(MPI_Ibarrier(handle_->comm, &handle_->request), "barrier"));
  return Complete("barrier", 0);
}

}  // namespace pagellm::dist
