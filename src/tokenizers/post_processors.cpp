#include "tokenizers/post_processors.h"

#include "core/error.h"

namespace attnlens::tok {

void WrapProcessor::check_ids(int vocab_size) const {
  for (const std::vector<int>* list : {&prefix_, &suffix_})
    for (int id : *list)
      AL_CHECK(id >= 0 && id < vocab_size, "post-processor id ", id, " is outside the vocabulary (size ", vocab_size, ")");
}

}  // namespace attnlens::tok
