// The `data:` section's keys (config_sections.h): read_fields lists of data, data.csv,
// data.augment and its rand_augment and random_erasing maps, each key with its meaning (the
// config reference is generated from them). Part of config_loader.cpp's one walk of the tree.
// Thread-safe: no shared state.
#include "config/config_sections.h"

#include "config/config_internal.h"
#include "config/config_yaml.h"

namespace ltfit::config_internal {
namespace {

void convert_random_erasing(const Walk& walk, const Located& at, RandomErasingConfig& erasing) {
  read_fields(
      walk, at,
      {field("p", erasing.p, "probability that an image gets a box erased; 0: off",
             closed(0, 1, "a probability in [0, 1]")),
       field("scale", erasing.scale, "the box's area as a fraction of the image's: [min, max]"),
       field("ratio", erasing.ratio, "the box's aspect ratio range [min, max] (log-uniform)"),
       field("value", read_erasing_value, write_erasing_value, erasing, "random, or a number",
             "random: per-pixel standard normal noise (on the normalized image, timm's "
             "`mode='pixel'`); a number: that value")});
}

void convert_rand_augment(const Walk& walk, const Located& at, RandAugmentConfig& rand_augment) {
  read_fields(walk, at,
              {field("num_ops", rand_augment.num_ops,
                     "ops applied to each image, one after another (torchvision's `num_ops`)",
                     closed(1, 16, "an integer from 1 to 16")),
               field("magnitude", rand_augment.magnitude,
                     "the magnitude bin of every op, 0 (weakest) to 30 (strongest) of "
                     "torchvision's 31",
                     closed(0, 30, "an integer from 0 to 30 (31 magnitude bins)"))});
}

// `augment: none`, written or read (every augmentation off, in one key; it loads back as the same
// values); true when that was the case and the walk is done.
bool convert_augment_none(const Walk& walk, const Located& at, AugmentConfig& augment) {
  if (walk.emit != nullptr && augment == augment_none()) {
    *walk.emit << "none";
    return true;
  }
  if (walk.describe != nullptr || !at.node.IsDefined() || !at.node.IsScalar()) return false;
  if (!is_plain_scalar(at.node) || at.node.Scalar() != "none")
    fail_type(walk, at, "none, or a map of the keys below (flip, max_rotate, ...)");
  augment = augment_none();
  return true;
}

void convert_augment(const Walk& walk, const Located& at, AugmentConfig& augment) {
  if (convert_augment_none(walk, at, augment)) return;
  read_fields(
      walk, at,
      {field("flip", augment.flip, "random horizontal flip, p 0.5"),
       field("max_rotate", augment.max_rotate, "rotation range in degrees: ±max_rotate",
             closed(0, 180, "degrees from 0 to 180")),
       field("max_zoom", augment.max_zoom, "zoom drawn from [1, max_zoom]; 1 disables it",
             at_least(1, "a number >= 1")),
       field("max_lighting", augment.max_lighting,
             "brightness and contrast strength; 0 disables them",
             closed_open(0, 1, "a number in [0, 1)")),
       field("max_warp", augment.max_warp, "symmetric perspective warp magnitude; 0 disables it",
             closed_open(0, 1, "a number in [0, 1)")),
       field("p_affine", augment.p_affine,
             "probability of each affine transform (rotate, zoom, warp)",
             closed(0, 1, "a probability in [0, 1]")),
       field("p_lighting", augment.p_lighting,
             "probability of each lighting transform (brightness, contrast)",
             closed(0, 1, "a probability in [0, 1]")),
       field("random_crop", augment.random_crop,
             "the training crop (the shorter side's square) at a random position, fastai's "
             "`rand_crop`; false: centred, as validation images are"),
       field("crop", parse_train_crop, train_crop_name, augment.crop,
             "the training crop: resize (`data.resize_method`'s window, at a random position "
             "with `random_crop`, then the transforms above) or random_resized (torchvision's "
             "`RandomResizedCrop`: a box of `scale` of the image's area and aspect ratio in "
             "`ratio`, drawn as torchvision draws it, resized to the image size as Pillow "
             "does; the rotate, zoom and warp above, when on, then apply within the box)"),
       field("scale", augment.scale,
             "random_resized: the box's area as a fraction of the image's, [min, max] "
             "(torchvision's `scale`)"),
       field("ratio", augment.ratio,
             "random_resized: the box's aspect ratio (width / height) range [min, max], drawn "
             "log-uniformly (torchvision's `ratio`)"),
       field("on", parse_augment_place, augment_place_name, augment.on,
             "where the transforms above run: host (per image in the loader threads, one "
             "OpenCV warp from the decoded image) or device (the loader only crops and resizes; "
             "fastai v2's batch transforms, `aug_transforms`, then run on each training batch "
             "where it lives, the GPU on a GPU: one affine grid + grid sample, then brightness "
             "and contrast in logit space)"),
       field("policy", parse_augment_policy, augment_policy_name, augment.policy,
             "an automatic augmentation policy on the final-size training image, after the "
             "transforms above: none, rand_augment (torchvision's `RandAugment`) or "
             "trivial_augment (torchvision's `TrivialAugmentWide`), their 14 ops on uint8 pixels "
             "with nearest resampling and black fill; not applied by TTA"),
       section("rand_augment", convert_rand_augment, augment.rand_augment,
               "RandAugment's settings, used when `policy: rand_augment`"),
       section("random_erasing", convert_random_erasing, augment.random_erasing,
               "random erasing as torchvision's `RandomErasing` does it, on the normalized "
               "training batch, before MixUp (`augment: none` turns it off too)")});
}

void convert_csv(const Walk& walk, const Located& at, CsvConfig& csv) {
  read_fields(
      walk, at,
      {field("file", read_path, write_path, csv.file, kPathExpected,
             "the CSV file, relative to `data.root` (or absolute)"),
       field("path_column", csv.path_column,
             "the column of image paths (relative to `data.root`/`folder`): a header name, or a "
             "0-based index"),
       field("label_column", csv.label_column,
             "the column of labels: a header name, or a 0-based index"),
       field("valid_column", read_optional_text, write_optional_text, csv.valid_column,
             "null, or a column",
             "a column whose truthy values (1, true, yes, t, y, case-insensitive) mark the "
             "validation rows (fastai's `valid_col`); the default, `is_valid` (fastai's "
             "`ColSplitter` column, which `ltfit synth` writes), is used when the CSV has it; "
             "null, or the default missing: split by `data.valid_pct`"),
       field("label_delim", read_optional_text, write_optional_text, csv.label_delim,
             "null, or a string",
             "separator of several labels in one cell (fastai's `label_delim`, e.g. ' '); set, "
             "the task is multi-label unless `model.task` says otherwise"),
       field("folder", csv.folder, "the images' folder under `data.root` (fastai's `folder`)"),
       field("suffix", csv.suffix,
             "appended to each path (fastai's `suffix`, e.g. .jpg for names without one)")});
}

void convert_shards(const Walk& walk, const Located& at, ShardsConfig& shards) {
  read_fields(walk, at,
              {field("train", shards.train,
                     "the training shards, relative to `data.root`: a brace pattern as "
                     "WebDataset writes (`train-{000000..000099}.tar`: every one must exist), "
                     "brace lists (`{a,b}`), or `*` and `?` in the file name"),
               field("valid", shards.valid,
                     "the validation shards, as `train`; when the default matches no file, the "
                     "training samples are split by `data.valid_pct`")});
}

// The data section's keys about where the images are and how they are labelled and split.
std::vector<Field> data_source_fields(DataConfig& data) {
  return {
      field("root", read_path, write_path, data.root, kPathExpected,
            "dataset root: `train/<class>/*`, `valid/<class>/*` (folders), or Kaggle's flat "
            "`<class>.<N>.jpg` in `root/train` or `root` (kaggle)"),
      field("layout", parse_data_layout, data_layout_name, data.layout,
            "how the images under `data.root` are arranged and labelled: folders "
            "(`train_folder`/`valid_folder` of class folders, or class folders alone), kaggle "
            "(flat `<class>.<N>.jpg`), csv (`data.csv`), pattern (`label_pattern` on file "
            "names), cifar10 and cifar100 (CIFAR's binary batch files, in `data.root` or its "
            "`cifar-10-batches-bin` or `cifar-100-binary` folder, or the Python version's "
            "pickles in `cifar-10-batches-py` or `cifar-100-python`: the training batches train, "
            "the test batch validates; every image held in memory, none a file), shards (tar "
            "files as WebDataset writes them, `data.shards`: each sample the members sharing a "
            "name, an image and its `.cls` or `.json` label); auto: folders "
            "when `train_folder` holds class folders, else csv when `data.csv.file` exists, "
            "else kaggle when `<class>.<N>.jpg` files do, else cifar10 or cifar100 when their "
            "batch files do, else shards when `data.shards.train` names files, else plain class "
            "folders"),
      field("valid_count", data.valid_count,
            "kaggle layout: exactly this many images held out for validation, chosen by "
            "`run.seed` (the 2019 study's 2,000 of 25,000); 0 (the default): `valid_pct`, as "
            "every other drawn split",
            at_least(0, "an integer >= 0 (0: the split is drawn by data.valid_pct)")),
      section("csv", convert_csv, data.csv,
              "csv layout: a table of image paths and labels (fastai's `from_csv`), read as RFC "
              "4180 (quotes, embedded commas and newlines, CRLF, a UTF-8 BOM)"),
      field("label_pattern", data.label_pattern,
            "pattern layout: a regular expression in RE2 syntax (Python's `re` without "
            "backreferences or lookaround; matched in time linear in the name); the first group "
            "of a full match of each file name (under `data.root`, recursively) is its label "
            "(fastai's `from_name_re`); files that do not match are counted and named"),
      field("cifar_label", parse_cifar_label, cifar_label_name, data.cifar_label,
            "cifar100 layout: which label of each record trains, fine (its 100 classes) or "
            "coarse (its 20 superclasses)"),
      section("shards", convert_shards, data.shards,
              "shards layout: WebDataset's tar files; each sample is the members sharing a "
              "base name (`x.jpg` with `x.cls`: a class number or name, or `x.json`: "
              "`{\"label\": ...}`); class numbers are named by `classes.txt` in `data.root` "
              "(one name per line) when it is there"),
      field("valid_pct", data.valid_pct,
            "where no split is given (class folders without `valid_folder`, csv without "
            "`valid_column`, pattern, kaggle without `valid_count`): the fraction of images held "
            "out for validation, drawn by "
            "`run.seed` (fastai's `RandomSplitter`), written to the run's `split.csv`; 0: no "
            "validation split, every image trains and the last epoch's weights are the result "
            "(fastai's training on all the data: no validation metrics, no TTA pass, "
            "`best.ckpt` is the last epoch's; `train.early_stopping` and a plateau schedule, "
            "which judge by validation, are refused)"),
      field("train_folder", data.train_folder, "folders layout: the training split's folder"),
      field("valid_folder", data.valid_folder,
            "folders layout: the validation split's folder (`val` for ImageNet's tree)")};
}

// The data section's keys about how images become batches: size, framing, augmentation, limits.
std::vector<Field> data_batch_fields(DataConfig& data) {
  return {
      field("image_size", data.image_size, "side of the square training image, in pixels",
            closed(16, 4096, "an integer from 16 to 4096")),
      field("resize_method", parse_resize_method, resize_method_name, data.resize_method,
            "how each image becomes a square, as fastai's `Resize(method=...)`: crop (the "
            "shorter side's square, centred for validation, at a random position for training "
            "with `augment.random_crop`), squish (the whole image, its aspect ratio not kept) "
            "or pad (the longer side's square, the image in it and the rest filled by "
            "`pad_mode`); kept in checkpoints, so predict, evaluate and serve do the same"),
      field("pad_mode", parse_pad_mode, pad_mode_name, data.pad_mode,
            "what fills the pixels outside the image, fastai's `PadMode`: reflection (mirrored "
            "without repeating the edge), zeros (black) or border (the edge pixel repeated); "
            "used by `resize_method: pad` and by the training warps (rotate, zoom, warp)"),
      field("batch_size", data.batch_size,
            "images per batch (data-parallel: the global batch, split over the ranks)",
            at_least(1, "a positive integer")),
      field("workers", read_workers, write_workers, data.workers, "auto, or an integer",
            "loader threads (decode, augment, batch); auto: one per core",
            closed(0, kMaxLoaderWorkers, "auto or an integer from 1 to 256")),
      section("augment", convert_augment, data.augment,
              "training augmentation, fastai's `get_transforms()` parameters; validation images "
              "are only resized and centre-cropped. `augment: none` turns all of it off in one "
              "key (flip false, max_rotate 0, max_zoom 1, max_lighting 0, max_warp 0, p_affine "
              "0, p_lighting 0, random_crop false: training images are resized and centre-cropped "
              "as validation images are) and is written back as `none`"),
      field("size_schedule", read_size_schedule, write_size_schedule, data.size_schedule,
            "a list of [epoch, size] pairs, or []",
            "progressive resizing: from each (0-based, over all stages) epoch on, training "
            "images are `size` pixels square; validation and TTA stay at `image_size`; the "
            "size is in the log, `epochs.csv` and TensorBoard. [] (default): `image_size` "
            "throughout"),
      field("subset", data.subset,
            "fraction of each split's images used, per class, chosen by `run.seed` (quick "
            "rehearsals: `ltfit experiment --subset`)",
            open_closed(0, 1, "a fraction in (0, 1]")),
      field("max_pixels", read_max_pixels, write_max_pixels, data.max_pixels,
            "integer >= 0, or null",
            "largest image decoded, width × height from the file's header (PIL's "
            "MAX_IMAGE_PIXELS); larger files are skipped as unreadable; null: no limit"),
      field("formats", read_formats, write_formats, data.formats, "list of format names",
            "image formats decoded, recognised from the file's bytes, not its name; files of "
            "any other format are skipped as unreadable"),
      field("cache", parse_data_cache, data_cache_name, data.cache,
            "where decoded images are kept between epochs: none (decoded from the file every "
            "time), ram (the decoder's output, at the reduced scale it chose, kept in memory "
            "up to `cache_bytes` and shared by the loader threads; each epoch augments it "
            "afresh, so batches are the same as without it; hits, misses and bytes are in the "
            "log and `summary.json`'s `data_cache`) or device (a set whose images its source "
            "holds, CIFAR's, kept whole on the training device as uint8: each training batch "
            "is drawn, cropped from a copy padded by 4 pixels and flipped there, CIFAR's "
            "augmentation in place of `augment`'s host transforms, with no loader threads; "
            "fastai's batch transforms follow when `augment.on: device`; on a CPU from host "
            "memory)"),
      field("cache_bytes", read_byte_count, write_byte_count, data.cache_bytes,
            "bytes, e.g. 4294967296 or 4GiB (KiB, MiB, GiB, TiB; KB, MB, GB, TB)",
            "`cache: ram`: the most decoded pixels kept; images past it are decoded each time, "
            "as without the cache (nothing is evicted)")};
}

}  // namespace

void convert_data(const Walk& walk, const Located& at, DataConfig& data) {
  std::vector<Field> fields = data_source_fields(data);
  for (Field& f : data_batch_fields(data)) fields.push_back(std::move(f));
  read_fields(walk, at, fields);
}

}  // namespace ltfit::config_internal
