// The page `ltfit serve` answers at GET / (serve_job.h): self-contained HTML, CSS and JavaScript,
// no external resources, so it works offline. Internal.
#pragma once

#include <string>

namespace ltfit {

// The page's HTML.
const std::string& serve_page();

}  // namespace ltfit
