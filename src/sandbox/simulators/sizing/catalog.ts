/** The catalog's shape, the measurement vocabulary, and the seed catalog. */

export type ChartMeasure = "chest" | "waist" | "hips";
export type Range = [number, number];
export type SizeChart = Record<string, Partial<Record<ChartMeasure, Range>>>;
export type PreferredFit = (typeof PREFERRED_FITS)[number];
export type Measurements = Partial<Record<(typeof MEASUREMENT_NAMES)[number], number>>;

export interface CatalogItem {
  _id: string;
  name: string;
  brand: string;
  price: number;
  category: string;
  gender: string;
  material: string;
  available_sizes: string;
  size_chart: SizeChart;
}

/** Not shown in the spec: units. Chart measurements are body measurements in cm; height cm, weight kg. */
export const MEASUREMENT_NAMES = ["chest", "waist", "hips", "height", "weight"] as const;
export const CHART_MEASURES: readonly ChartMeasure[] = ["chest", "waist", "hips"];
/** Not shown in the spec: allowed values of preferred_fit. */
export const PREFERRED_FITS = ["slim", "regular", "relaxed"] as const;

// The seed catalog: fifteen items whose size charts are built from contiguous boundaries.
const LETTER_SIZES = ["XS", "S", "M", "L", "XL"];
const MEN_LETTER_SIZES = ["S", "M", "L", "XL", "XXL"];
const MEN_WAIST_SIZES = ["28", "30", "32", "34", "36", "38"];
const WOMEN_EU_SIZES = ["34", "36", "38", "40", "42", "44"];

/** Boundaries (cm) between consecutive sizes: n sizes need n + 1 boundaries, so ranges are contiguous. */
type Boundaries = Partial<Record<ChartMeasure, number[]>>;

const WOMEN_BOUNDS: Boundaries = {
  chest: [78, 82, 87, 92, 98, 104],
  waist: [60, 64, 69, 74, 80, 86],
  hips: [86, 90, 95, 100, 106, 112],
};
const MEN_BOUNDS: Boundaries = {
  chest: [88, 96, 104, 112, 120, 128],
  waist: [74, 82, 90, 98, 106, 114],
  hips: [90, 98, 106, 114, 122, 130],
};
const UNISEX_BOUNDS: Boundaries = {
  chest: [80, 86, 92, 100, 108, 116],
  waist: [66, 72, 78, 86, 94, 102],
  hips: [84, 90, 96, 104, 112, 120],
};
const MEN_PANTS_BOUNDS: Boundaries = {
  waist: [70, 75, 80, 85, 90, 95, 100],
  hips: [86, 91, 96, 101, 106, 111, 116],
};
const WOMEN_PANTS_BOUNDS: Boundaries = {
  waist: [62, 66, 70, 74, 78, 82, 86],
  hips: [88, 92, 96, 100, 104, 108, 112],
};

function sized(sizes: string[], bounds: Boundaries): Pick<CatalogItem, "available_sizes" | "size_chart"> {
  const size_chart: SizeChart = {};
  sizes.forEach((size, i) => {
    const entry: Partial<Record<ChartMeasure, Range>> = {};
    for (const measure of CHART_MEASURES) {
      const b = bounds[measure];
      if (b) entry[measure] = [b[i], b[i + 1]];
    }
    size_chart[size] = entry;
  });
  return { available_sizes: sizes.join(","), size_chart };
}

export const CATALOG: readonly CatalogItem[] = [
  {
    _id: "6650c1a2f3b4d5e6a7b80101",
    name: "Ribbed Cotton Tank",
    brand: "Linea",
    price: 24,
    category: "tops",
    gender: "women",
    material: "95% cotton, 5% elastane",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80102",
    name: "Relaxed Linen Blouse",
    brand: "Moss Atelier",
    price: 59.9,
    category: "tops",
    gender: "women",
    material: "100% linen",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80103",
    name: "Heavyweight Crew Tee",
    brand: "Harbor Supply",
    price: 32,
    category: "tops",
    gender: "unisex",
    material: "100% organic cotton",
    ...sized(LETTER_SIZES, UNISEX_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80104",
    name: "Merino Henley",
    brand: "Fieldnorth",
    price: 79,
    category: "tops",
    gender: "men",
    material: "100% merino wool",
    ...sized(MEN_LETTER_SIZES, MEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80105",
    name: "Oxford Button-Down Shirt",
    brand: "Cobalt & Pine",
    price: 69.5,
    category: "shirts",
    gender: "men",
    material: "100% cotton oxford",
    ...sized(MEN_LETTER_SIZES, MEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80106",
    name: "Silk Poplin Shirt",
    brand: "Aurelia",
    price: 129,
    category: "shirts",
    gender: "women",
    material: "100% mulberry silk",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80107",
    name: "Flannel Overshirt",
    brand: "Harbor Supply",
    price: 74,
    category: "shirts",
    gender: "unisex",
    material: "100% brushed cotton",
    ...sized(LETTER_SIZES, UNISEX_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80108",
    name: "Wrap Midi Dress",
    brand: "Aurelia",
    price: 149,
    category: "dresses",
    gender: "women",
    material: "100% viscose",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b80109",
    name: "Knit Slip Dress",
    brand: "Linea",
    price: 89,
    category: "dresses",
    gender: "women",
    material: "80% cotton, 20% polyamide",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010a",
    name: "Slim Stretch Chino",
    brand: "Cobalt & Pine",
    price: 79.9,
    category: "pants",
    gender: "men",
    material: "98% cotton, 2% elastane",
    ...sized(MEN_WAIST_SIZES, MEN_PANTS_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010b",
    name: "Straight Selvedge Jeans",
    brand: "Vantage Denim",
    price: 128,
    category: "pants",
    gender: "men",
    material: "100% cotton selvedge denim",
    ...sized(MEN_WAIST_SIZES, MEN_PANTS_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010c",
    name: "High-Rise Wide-Leg Trouser",
    brand: "Moss Atelier",
    price: 98,
    category: "pants",
    gender: "women",
    material: "64% polyester, 34% viscose, 2% elastane",
    ...sized(WOMEN_EU_SIZES, WOMEN_PANTS_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010d",
    name: "Waxed Field Jacket",
    brand: "Fieldnorth",
    price: 249,
    category: "outerwear",
    gender: "unisex",
    material: "100% waxed cotton",
    ...sized(LETTER_SIZES, UNISEX_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010e",
    name: "Wool Wrap Coat",
    brand: "Aurelia",
    price: 329,
    category: "outerwear",
    gender: "women",
    material: "80% wool, 20% cashmere",
    ...sized(LETTER_SIZES, WOMEN_BOUNDS),
  },
  {
    _id: "6650c1a2f3b4d5e6a7b8010f",
    name: "Down Puffer Jacket",
    brand: "Harbor Supply",
    price: 219,
    category: "outerwear",
    gender: "men",
    material: "Recycled nylon shell, 90/10 down fill",
    ...sized(MEN_LETTER_SIZES, MEN_BOUNDS),
  },
];
