// The teacher's page, served from the binary: the HTML shell, its script and its style. The
// script builds every element with textContent (no markup from data) and polls the summary.
#pragma once

namespace opscope::classroom {

const char* teacher_html();
const char* teacher_js();
const char* teacher_css();

}  // namespace opscope::classroom
