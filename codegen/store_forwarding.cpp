// Store-to-load forwarding (store_forwarding.h).
#include "codegen/store_forwarding.h"

#include <algorithm>
#include <optional>

#include "device/verifier.h"

namespace neuronc::codegen {
namespace {

using device::DmaCopy;
using device::MemoryKind;
using device::MemRef;

// Elements of the contiguous run each partition of `m` covers, or nothing when its free levels
// are not one run starting at `offset`.
std::optional<uint64_t> contiguous_run(const MemRef& m) {
  int64_t expected = 1;
  for (int l = m.num_levels - 1; l >= 0; --l) {
    const device::AccessLevel& lv = m.levels[static_cast<size_t>(l)];
    if (lv.count == 1) continue;
    if (lv.stride != expected) return std::nullopt;
    expected *= lv.count;
  }
  return static_cast<uint64_t>(expected);
}

using Rect = ByteRect;

Rect rect_of(const MemRef& m) {
  return byte_rect(m);
}

// A store the analysis follows: an SBUF -> HBM DMA.
struct Store {
  size_t inst;
  Rect hbm;
  Rect src;             // the SBUF bytes it read
  bool forwardable;     // contiguous rows, one dtype: loads may read its SBUF tile instead
  bool intact = true;   // no instruction has written `src` since
  bool needed = false;  // some DMA reads its HBM bytes
};

// An HBM write still visible to later readers (not yet covered by a dense later write).
struct Writer {
  Rect hbm;
  bool dense;      // writes every byte of `hbm`
  int store = -1;  // index into the stores, or -1 (HBM -> HBM copies, collectives)
};

// The HBM pattern of a DMA side as rows of one contiguous run: dense when the rows are back to
// back, so its footprint is exactly the bytes it touches.
bool dense_rows(const MemRef& m) {
  const std::optional<uint64_t> run = contiguous_run(m);
  return run && (m.partition_count == 1 || m.partition_stride == static_cast<int64_t>(*run));
}

// The elements [lo, hi) of `m`'s iteration order (per partition) as at most three patterns:
// `m` has at most two levels of more than one step (a padded band: rows of W at a pitch).
// Nothing when it has more.
std::optional<std::vector<MemRef>> slice_pattern(const MemRef& m, int64_t lo, int64_t hi) {
  std::vector<device::AccessLevel> lv;
  for (int l = 0; l < m.num_levels; ++l)
    if (m.levels[static_cast<size_t>(l)].count > 1) lv.push_back(m.levels[static_cast<size_t>(l)]);
  if (lv.size() > 2) return std::nullopt;
  if (lv.empty()) lv.push_back({1, 1});
  const int64_t esz = device::dtype_size(m.dtype);
  const int64_t w = lv.back().count, s0 = lv.back().stride;
  const int64_t s1 = lv.size() == 2 ? lv.front().stride : 0;
  auto piece = [&](int64_t row, int64_t col, std::vector<device::AccessLevel> levels) {
    MemRef p = m;
    p.offset = static_cast<uint64_t>(static_cast<int64_t>(m.offset) + (row * s1 + col * s0) * esz);
    p.num_levels = static_cast<uint8_t>(levels.size());
    p.levels = {};
    for (size_t i = 0; i < levels.size(); ++i) p.levels[i] = levels[i];
    return p;
  };
  std::vector<MemRef> out;
  if (lo % w != 0 && lo < hi) {
    const int64_t n = std::min(w - lo % w, hi - lo);
    out.push_back(piece(lo / w, lo % w, {{static_cast<int32_t>(s0), static_cast<uint32_t>(n)}}));
    lo += n;
  }
  if (const int64_t rows = (hi - lo) / w; rows > 0) {
    std::vector<device::AccessLevel> levels;
    if (rows > 1) levels.push_back({static_cast<int32_t>(s1), static_cast<uint32_t>(rows)});
    levels.push_back({static_cast<int32_t>(s0), static_cast<uint32_t>(w)});
    out.push_back(piece(lo / w, 0, levels));
    lo += rows * w;
  }
  if (lo < hi)
    out.push_back(piece(lo / w, 0, {{static_cast<int32_t>(s0), static_cast<uint32_t>(hi - lo)}}));
  return out;
}

// One load side or store side as rows of one contiguous run in HBM: `rows` rows `stride`
// elements apart (any stride for one row), `run` elements each, from element `offset`.
struct Rows {
  int64_t offset, stride, rows, run;
};

std::optional<Rows> rows_of(const MemRef& hbm_side) {
  const std::optional<uint64_t> run = contiguous_run(hbm_side);
  if (!run) return std::nullopt;
  const int64_t esz = device::dtype_size(hbm_side.dtype);
  if (hbm_side.offset % static_cast<uint64_t>(esz) != 0) return std::nullopt;
  return Rows{static_cast<int64_t>(hbm_side.offset) / esz, hbm_side.partition_stride,
              hbm_side.partition_count, static_cast<int64_t>(*run)};
}

// The engine copies that replace load `l`, reading the SBUF tiles of the newest stores that
// wrote its bytes, or nothing when any of its bytes may come from elsewhere. Each store must
// have written whole rows' worth of the load's columns from the partitions the load fills
// (engines do not move data across partitions) in the load's dtype.
std::optional<std::vector<device::TensorCopy>> forwarded(const std::vector<Writer>& writers,
                                                         const std::vector<Store>& stores,
                                                         const std::vector<PendingInstruction>& out,
                                                         const DmaCopy& l) {
  const MemRef& src = l.src;
  const MemRef& dst = l.dst;
  // A converting load converts on the engine instead (ScalarE and GpSimdE round like the DMA).
  if (l.row_index || src.memory != MemoryKind::hbm || dst.memory != MemoryKind::sbuf ||
      src.partition_count != dst.partition_count ||
      (src.dtype != dst.dtype &&
       !(device::dtype_is_float(src.dtype) && device::dtype_is_float(dst.dtype))))
    return std::nullopt;
  // DMAs fill any partitions; an engine copy must start where engines may (found by the
  // differential tester: a load into partition 1 became a copy the verifier refused).
  if (!device::engine_partitions_allowed(dst.partition_start, dst.partition_count))
    return std::nullopt;
  const std::optional<Rows> lr = rows_of(src);
  if (!lr || static_cast<int64_t>(dst.free_size()) != lr->run || !slice_pattern(dst, 0, lr->run))
    return std::nullopt;
  const int64_t esz = device::dtype_size(src.dtype);
  const Rect r = rect_of(src);
  std::vector<std::pair<int64_t, int64_t>> open{{0, lr->run}}, next;  // columns not yet found
  std::vector<device::TensorCopy> copies;
  for (auto w = writers.rbegin(); w != writers.rend() && !open.empty(); ++w) {
    if (!overlaps(w->hbm, r)) continue;
    if (w->store < 0) return std::nullopt;
    const Store& st = stores[static_cast<size_t>(w->store)];
    const DmaCopy& s = std::get<DmaCopy>(out[st.inst].op);
    if (!st.forwardable || !st.intact || s.dst.dtype != src.dtype) return std::nullopt;
    const std::optional<Rows> sr = rows_of(s.dst);
    if (!sr) return std::nullopt;
    // A common row frame: the row stride of whichever side has several rows.
    int64_t ps = 0;
    if (lr->rows > 1 && sr->rows > 1 && lr->stride != sr->stride) return std::nullopt;
    if (lr->rows > 1) ps = lr->stride;
    if (sr->rows > 1) ps = sr->stride;
    if (ps != 0 && (ps < lr->run || ps < sr->run)) return std::nullopt;
    const int64_t d = sr->offset - lr->offset;  // store start relative to the load's
    int64_t row = 0, col = d;
    if (ps != 0) {
      col = ((d % ps) + ps) % ps;
      row = (d - col) / ps;
    }
    // The store's run may wrap into the next row of the frame: two parts.
    struct Part {
      int64_t row, c0, c1, x0;  // frame row shift, columns [c0, c1), tile column of c0
    };
    std::vector<Part> parts{{row, col, ps ? std::min(ps, col + sr->run) : col + sr->run, 0}};
    if (ps != 0 && col + sr->run > ps) parts.push_back({row + 1, 0, col + sr->run - ps, ps - col});
    for (const Part& pt : parts) {
      const int64_t c0 = std::max<int64_t>(pt.c0, 0), c1 = std::min(pt.c1, lr->run);
      if (c0 >= c1) continue;
      // Load row i (partition dst.start + i) is store row i - pt.row (partition
      // s.src.start + i - pt.row): the same partition, and every load row is stored.
      if (pt.row != static_cast<int64_t>(s.src.partition_start) - dst.partition_start ||
          pt.row > 0 || -pt.row + lr->rows > sr->rows)
        return std::nullopt;
      next.clear();
      for (const auto& [a, b] : open) {
        const int64_t lo = std::max(a, c0), hi = std::min(b, c1);
        if (lo >= hi) {
          next.push_back({a, b});
          continue;
        }
        if (a < lo) next.push_back({a, lo});
        if (hi < b) next.push_back({hi, b});
        int64_t at = lo;
        const std::optional<std::vector<MemRef>> pieces = slice_pattern(dst, lo, hi);
        for (const MemRef& piece : *pieces) {
          device::TensorCopy c;
          c.dst = piece;
          c.src = device::sbuf(dst.partition_start, dst.partition_count,
                               s.src.offset + static_cast<uint64_t>((pt.x0 + at - pt.c0) * esz),
                               src.dtype, static_cast<uint32_t>(piece.free_size()));
          at += static_cast<int64_t>(piece.free_size());
          // A copy onto its own source (the consumer's buffer over the producer's tile) is not
          // a plain copy on hardware: keep the DMA.
          if (overlaps(rect_of(c.src), rect_of(c.dst))) return std::nullopt;
          copies.push_back(c);
        }
      }
      open.swap(next);
    }
  }
  if (!open.empty()) return std::nullopt;
  std::sort(copies.begin(), copies.end(),
            [](const device::TensorCopy& a, const device::TensorCopy& b) {
              return a.dst.offset < b.dst.offset;
            });
  return copies;
}

}  // namespace

ForwardingStats forward_stores(std::vector<PendingInstruction>& insts,
                               uint64_t elidable_hbm_begin) {
  ForwardingStats stats;
  std::vector<Store> stores;
  std::vector<int> intact;  // stores whose SBUF tile is still intact
  std::vector<Writer> writers;

  // A read of `r` needs every store whose bytes may be the latest there: newest first, until
  // dense writes cover the whole range.
  auto mark_readers = [&](const Rect& r) {
    std::vector<std::pair<int64_t, int64_t>> open{{r.b0, r.b1}}, next;
    for (auto w = writers.rbegin(); w != writers.rend() && !open.empty(); ++w) {
      const bool hit = std::any_of(open.begin(), open.end(), [&](const auto& o) {
        return o.first < w->hbm.b1 && w->hbm.b0 < o.second;
      });
      if (!hit) continue;
      if (w->store >= 0) stores[static_cast<size_t>(w->store)].needed = true;
      if (!w->dense) continue;
      next.clear();
      for (const auto& [a, b] : open) {
        if (a < w->hbm.b0) next.push_back({a, std::min(b, w->hbm.b0)});
        if (b > w->hbm.b1) next.push_back({std::max(a, w->hbm.b1), b});
      }
      open.swap(next);
    }
  };

  // Follows what instruction `in`, at `index` of the output, reads and writes.
  auto record = [&](const PendingInstruction& in, size_t index) {
    const device::Operands ops = device::operands(in.op);
    for (const MemRef& m : ops.reads)
      if (m.memory == MemoryKind::hbm) mark_readers(rect_of(m));
    for (const MemRef& m : ops.writes) {
      if (m.memory == MemoryKind::psum) continue;
      const Rect r = rect_of(m);
      if (m.memory == MemoryKind::sbuf) {
        std::erase_if(intact, [&](int k) {
          Store& st = stores[static_cast<size_t>(k)];
          if (!overlaps(st.src, r)) return false;
          st.intact = false;
          return true;
        });
        continue;
      }
      const bool dense = dense_rows(m);
      if (dense)
        std::erase_if(writers, [&](const Writer& w) {
          if (!(r.b0 <= w.hbm.b0 && w.hbm.b1 <= r.b1)) return false;
          if (w.store >= 0) std::erase(intact, w.store);  // its tile is unreachable now
          return true;
        });
      Writer w{r, dense, -1};
      const auto* d = std::get_if<DmaCopy>(&in.op);
      if (d && !d->row_index && d->src.memory == MemoryKind::sbuf) {
        Store st{index, r, rect_of(d->src), false};
        const std::optional<uint64_t> run = contiguous_run(d->src);
        const std::optional<Rows> rows = rows_of(d->dst);
        st.forwardable = d->src.dtype == d->dst.dtype && run && rows &&
                         rows->run == static_cast<int64_t>(*run) &&
                         d->src.partition_count == d->dst.partition_count;
        w.store = static_cast<int>(stores.size());
        if (st.forwardable) intact.push_back(w.store);
        stores.push_back(st);
      }
      writers.push_back(w);
    }
  };

  std::vector<PendingInstruction> out;
  out.reserve(insts.size());
  for (PendingInstruction& in : insts) {
    if (auto* l = std::get_if<DmaCopy>(&in.op)) {
      if (auto copies = forwarded(writers, stores, out, *l)) {
        stats.loads_forwarded += 1;
        stats.dma_bytes_saved +=
            l->dst.free_size() * l->dst.partition_count * device::dtype_size(l->dst.dtype);
        for (const device::TensorCopy& c : *copies) {
          PendingInstruction copy;
          copy.engine = device::Engine::gpsimd;
          copy.debug_id = in.debug_id;
          copy.op = c;
          record(copy, out.size());
          out.push_back(std::move(copy));
        }
        continue;
      }
    }
    record(in, out.size());
    out.push_back(std::move(in));
  }

  std::vector<uint8_t> drop(out.size(), 0);
  for (const Store& st : stores) {
    if (st.needed || st.hbm.b0 < static_cast<int64_t>(elidable_hbm_begin)) continue;
    drop[st.inst] = 1;
    const DmaCopy& s = std::get<DmaCopy>(out[st.inst].op);
    stats.stores_elided += 1;
    stats.dma_bytes_saved +=
        s.src.free_size() * s.src.partition_count * device::dtype_size(s.src.dtype);
  }
  insts.clear();
  for (size_t i = 0; i < out.size(); ++i)
    if (!drop[i]) insts.push_back(std::move(out[i]));
  return stats;
}

}  // namespace neuronc::codegen
